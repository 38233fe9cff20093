package benchmarks

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// driveRate sends requests at a steady rate (open loop) until the
// deadline, spread round-robin over subs: a request is started when it is
// due, whether or not earlier ones have answered, as traffic reaches a
// service. At most slots requests are in flight; one due while all slots
// are busy is dropped and counted. pick(n) gives the id of request n.
func driveRate(ctx context.Context, subs []Subject, rate, slots int, deadline time.Time, pick func(n int64) int64) (*outcome, int64) {
	rate, slots = max(rate, 1), max(slots, 1)
	o := &outcome{lat: newLatencies(slots)}
	free := make(chan int, slots)
	for i := 0; i < slots; i++ {
		free <- i
	}
	var wg sync.WaitGroup
	var dropped atomic.Int64
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	var issued int64
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(deadline) {
			break
		}
		due := int64(now.Sub(start).Seconds() * float64(rate))
		for ; issued < due; issued++ {
			var slot int
			select {
			case slot = <-free:
			default:
				dropped.Add(1)
				continue
			}
			n := issued
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { free <- slot }()
				t := time.Now()
				_, err := subs[n%int64(len(subs))].Get(ctx, pick(n))
				o.record(slot, time.Since(t), err)
			}()
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	wg.Wait()
	return o, dropped.Load()
}
