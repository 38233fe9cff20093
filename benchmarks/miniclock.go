package benchmarks

import (
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Bounds of the embedded Redis's clock tick (runClock).
const (
	minClockTick = 10 * time.Millisecond
	maxClockTick = 100 * time.Millisecond
	// clockShare is the most of one core that advancing TTLs may take:
	// the tick is at least 1/clockShare times as long as the last
	// FastForward took.
	clockShare = 0.1
)

// runClock makes mr's TTLs follow the wall clock, as a server's do, until
// stop is closed, and returns once it is. It calls FastForward with the
// time elapsed every tick rather than using miniredis's ClockTTL: ClockTTL
// advances TTLs on every command, and each advance lists and sorts every
// key, so that a run's commands grow slower with its key count (a demo
// reaching tens of thousands of keys spent most of its time sorting them,
// and its cleanup's UNLINKs ran past their deadline). The tick is
// minClockTick while the keys are few and grows with the cost of an
// advance, up to maxClockTick, so that keeping time never takes more than
// about clockShare of a core: a key expires at most one tick late.
func runClock(mr *miniredis.Miniredis, stop <-chan struct{}) {
	last := time.Now()
	tick := minClockTick
	t := time.NewTimer(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := time.Now()
		mr.FastForward(now.Sub(last))
		cost := time.Since(now)
		last = now
		tick = min(max(time.Duration(float64(cost)/clockShare), minClockTick), maxClockTick)
		t.Reset(tick)
	}
}
