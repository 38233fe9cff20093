package benchmarks

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// outcome tallies the requests of one run.
type outcome struct {
	requests   atomic.Int64
	errors     atomic.Int64
	notFound   atomic.Int64
	overloaded atomic.Int64
	firstErr   atomic.Pointer[error]
	lat        *latencies
}

func (o *outcome) record(w int, d time.Duration, err error) {
	o.lat.add(w, d)
	o.count(err)
}

// recordAt is record for a request whose start time is kept.
func (o *outcome) recordAt(w int, start time.Time, d time.Duration, err error) {
	o.lat.addAt(w, start, d)
	o.count(err)
}

func (o *outcome) count(err error) {
	o.requests.Add(1)
	switch {
	case err == nil:
	case errors.Is(err, ErrNotFound):
		o.notFound.Add(1)
	case isOverloaded(err):
		o.overloaded.Add(1)
		o.errors.Add(1)
	default:
		o.errors.Add(1)
		o.firstErr.CompareAndSwap(nil, &err)
	}
}

// fill writes requests, errors and latencies into r.
func (o *outcome) fill(r *Row) {
	r.Set(MetricRequests, float64(o.requests.Load()))
	r.Set(MetricErrors, float64(o.errors.Load()))
	setLatency(r, o.lat)
}

// drive runs l.Instances × l.Goroutines workers; worker w of instance i
// calls next(w) for the id to read (stop when ok is false), reads it
// through subs[i] and records the outcome. It returns when every worker
// has stopped or ctx is done.
func drive(ctx context.Context, subs []Subject, l Load, next func(w int) (id int64, ok bool), tr Tracker) *outcome {
	l = l.norm()
	o := &outcome{lat: newLatencies(len(subs) * l.Goroutines)}
	var wg sync.WaitGroup
	for i, s := range subs {
		for g := 0; g < l.Goroutines; g++ {
			w := i*l.Goroutines + g
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					id, ok := next(w)
					if !ok {
						return
					}
					start := time.Now()
					_, err := s.Get(ctx, id)
					o.recordAt(w, start, time.Since(start), err)
					if tr != nil {
						tr.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	return o
}

// until returns a next function that hands out ids from pick until the
// deadline.
func until(deadline time.Time, pick func(w int) int64) func(int) (int64, bool) {
	return func(w int) (int64, bool) {
		if !time.Now().Before(deadline) {
			return 0, false
		}
		return pick(w), true
	}
}

// sequence returns a next function that hands out ids[0], ids[1], ... once.
func sequence(ids []int64) func(int) (int64, bool) {
	var i atomic.Int64
	return func(int) (int64, bool) {
		n := i.Add(1) - 1
		if n >= int64(len(ids)) {
			return 0, false
		}
		return ids[n], true
	}
}
