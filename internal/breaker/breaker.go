// Package breaker stops calls to a failing Redis, for the packages that
// call it on a hot path (cacheaside, guard/limit, seqgen): a dead server
// then costs no timeout per call.
package breaker

import (
	"sync/atomic"
	"time"
)

// Breaker opens after Threshold consecutive failures, for Cooldown; then
// one caller at a time probes Redis (half-open): a success closes it, a
// failure opens it again for another cooldown. A probe that reports
// nothing (its caller's context ended) lets another probe through after
// another cooldown. The configuration fields are set before the first
// call and never change; the zero Breaker never opens.
type Breaker struct {
	Threshold int64         // consecutive failures that open it; <= 0: never opens
	Cooldown  time.Duration // open period
	// Recovered, when set, is called by the first success after failures
	// (Redis answers again).
	Recovered func()
	// Clock, when set (by tests), replaces time.Now.
	Clock func() time.Time

	fails     atomic.Int64  // consecutive failures
	openUntil atomic.Int64  // Unix nanoseconds; 0 = closed
	opens     atomic.Uint64 // times it went from closed to open
}

func (b *Breaker) now() int64 {
	if b.Clock != nil {
		return b.Clock().UnixNano()
	}
	return time.Now().UnixNano()
}

// Allow reports whether a Redis call may be made. It is one atomic load
// while the breaker is closed (and small enough to be inlined).
func (b *Breaker) Allow() bool {
	u := b.openUntil.Load()
	return u == 0 || b.allowOpen(u)
}

// allowOpen is Allow while the breaker is open until u.
func (b *Breaker) allowOpen(u int64) bool {
	now := b.now()
	if now < u {
		return false
	}
	// Half-open: the caller that moves the deadline is the probe.
	return b.openUntil.CompareAndSwap(u, now+int64(b.Cooldown))
}

// Success records a call that Redis answered; it closes the breaker. Two
// atomic loads when nothing failed (and small enough to be inlined).
func (b *Breaker) Success() {
	if b.fails.Load()|b.openUntil.Load() != 0 {
		b.recovered()
	}
}

// recovered is Success after failures.
func (b *Breaker) recovered() {
	back := false
	if b.fails.Load() != 0 {
		b.fails.Store(0)
		back = true
	}
	if b.openUntil.Load() != 0 {
		b.openUntil.Store(0)
		back = true
	}
	if back && b.Recovered != nil {
		b.Recovered()
	}
}

// Failure records a call that Redis did not answer.
func (b *Breaker) Failure() {
	if b.fails.Add(1) >= b.Threshold && b.Threshold > 0 {
		if b.openUntil.Swap(b.now()+int64(b.Cooldown)) == 0 {
			b.opens.Add(1)
		}
	}
}

// Clean reports whether the breaker is closed with no failure counted:
// Success would change nothing.
func (b *Breaker) Clean() bool { return b.fails.Load()|b.openUntil.Load() == 0 }

// Open reports whether the breaker is open (or half-open).
func (b *Breaker) Open() bool { return b.openUntil.Load() != 0 }

// Opens returns how many times the breaker went from closed to open.
func (b *Breaker) Opens() uint64 { return b.opens.Load() }

// RetryAfter returns how long until the breaker lets a probe through; 0
// when it is closed.
func (b *Breaker) RetryAfter() time.Duration {
	u := b.openUntil.Load()
	if u == 0 {
		return 0
	}
	return max(time.Duration(u-b.now()), 0)
}
