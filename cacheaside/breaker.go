package cacheaside

import (
	"sync/atomic"
	"time"
)

// breaker stops calls to a failing Redis. After threshold consecutive
// failures it opens for cooldown; then one caller at a time probes Redis
// (half-open): a success closes it, a failure opens it again. A probe that
// reports nothing (its context ended) simply lets another probe through
// after another cooldown.
type breaker struct {
	threshold int64         // <= 0: never opens
	cooldown  time.Duration // open period
	fails     atomic.Int64  // consecutive failures
	openUntil atomic.Int64  // Unix nanoseconds; 0 = closed
	recovered func()        // called by the first success after failures; may be nil
}

// allow reports whether a Redis call may be made. It is one atomic load
// while the breaker is closed.
func (b *breaker) allow() bool {
	u := b.openUntil.Load()
	if u == 0 {
		return true
	}
	now := time.Now().UnixNano()
	if now < u {
		return false
	}
	// Half-open: the caller that moves the deadline is the probe.
	return b.openUntil.CompareAndSwap(u, now+int64(b.cooldown))
}

// success records a Redis call that worked (redis.Nil included). The
// first after failures calls recovered, if set.
func (b *breaker) success() {
	back := false
	if b.fails.Load() != 0 {
		b.fails.Store(0)
		back = true
	}
	if b.openUntil.Load() != 0 {
		b.openUntil.Store(0)
		back = true
	}
	if back && b.recovered != nil {
		b.recovered()
	}
}

// failure records a Redis call that failed.
func (b *breaker) failure() {
	if b.fails.Add(1) >= b.threshold && b.threshold > 0 {
		b.openUntil.Store(time.Now().UnixNano() + int64(b.cooldown))
	}
}
