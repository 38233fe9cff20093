package limit

import (
	"errors"
	"sync/atomic"
)

// Stats are a limiter's counts of its own calls since it was made (in this
// process; other processes sharing the keys count theirs). Each AllowN,
// and each attempt of Wait, counts once; for a Semaphore, each attempt of
// TryAcquire and Acquire.
type Stats struct {
	// Allowed counts calls allowed (leases given, for a Semaphore),
	// failed-open ones included.
	Allowed uint64
	// Refused counts calls refused because the limit was reached.
	Refused uint64
	// Errors counts calls that got no answer from Redis (the context
	// ended, or Redis failed), failed-open ones included, and calls with
	// invalid input.
	Errors uint64
	// FailedOpen counts the Errors that Options.FailOpen let through.
	FailedOpen uint64
	// Bypassed counts the Errors that did not ask Redis because the
	// breaker was open (ErrBreakerOpen).
	Bypassed uint64
	// BreakerOpens counts the times the breaker opened after
	// Options.BreakerThreshold consecutive Redis failures (a failed probe
	// keeps it open and is not counted again). Release, Refresh and Reset
	// go through the same breaker.
	BreakerOpens uint64
	// LocalFallbacks counts the calls decided in this process by
	// Options.LocalFallback because Redis failed (counted in Allowed or
	// Refused, not in Errors).
	LocalFallbacks uint64
}

// counters are a limiter's Stats, updated atomically.
type counters struct {
	allowed, refused, errors, failedOpen, bypassed, local atomic.Uint64
}

// count records the outcome of one call.
func (c *counters) count(allowed bool, err error) {
	if err != nil && errors.Is(err, ErrBreakerOpen) {
		c.bypassed.Add(1)
	}
	switch {
	case err != nil && allowed:
		c.errors.Add(1)
		c.failedOpen.Add(1)
		c.allowed.Add(1)
	case err != nil:
		c.errors.Add(1)
	case allowed:
		c.allowed.Add(1)
	default:
		c.refused.Add(1)
	}
}

func (c *counters) stats(g *guard) Stats {
	return Stats{
		Allowed: c.allowed.Load(), Refused: c.refused.Load(), Errors: c.errors.Load(), FailedOpen: c.failedOpen.Load(),
		Bypassed: c.bypassed.Load(), BreakerOpens: g.br.Opens(), LocalFallbacks: c.local.Load(),
	}
}

func (l *limiter) Stats() Stats { return l.ctr.stats(l.g) }

// Stats returns the Semaphore's counts: Allowed are leases given, Refused
// attempts that found every slot taken.
func (s *Semaphore) Stats() Stats { return s.ctr.stats(s.g) }
