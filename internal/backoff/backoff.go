// Package backoff yields the jittered, exponentially growing delays that
// asidekit's waiters, retry loops and reconnecting subscriptions sleep
// between tries, and sleeps them until a context ends.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff yields delays: each is uniform in [d/2, d], and d doubles from
// lo up to hi. The zero value is not usable; build one with New. It is not
// safe for concurrent use.
type Backoff struct {
	lo, hi, d time.Duration
}

// New returns a Backoff from lo up to hi.
func New(lo, hi time.Duration) Backoff {
	return Backoff{lo: lo, hi: hi, d: lo}
}

// Next returns the next delay and grows the one after it.
func (b *Backoff) Next() time.Duration {
	d := b.d
	b.d = min(2*b.d, b.hi)
	return d/2 + rand.N(d/2+1)
}

// Reset starts again from the smallest delay.
func (b *Backoff) Reset() { b.d = b.lo }

// Wait sleeps the next delay (see Next), or until ctx ends, and then
// returns ctx.Err(); it returns nil when the delay passed.
func (b *Backoff) Wait(ctx context.Context) error { return Sleep(ctx, b.Next()) }

// Sleep waits d, or until ctx ends, and then returns ctx.Err(); it returns
// nil when d passed. A d ≤ 0 returns at once, ctx.Err() if ctx has ended.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
