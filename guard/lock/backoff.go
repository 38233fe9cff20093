package lock

import (
	"math/rand/v2"
	"time"
)

// backoff yields exponentially growing, jittered delays: each is uniform
// in [d/2, d], and d doubles from lo up to hi. The zero value is not
// usable; build one with newBackoff.
type backoff struct {
	lo, hi, d time.Duration
}

func newBackoff(lo, hi time.Duration) backoff {
	return backoff{lo: lo, hi: hi, d: lo}
}

// next returns the next delay and grows the one after it.
func (b *backoff) next() time.Duration {
	d := b.d
	b.d = min(2*b.d, b.hi)
	return d/2 + rand.N(d/2+1)
}

// reset starts again from the smallest delay.
func (b *backoff) reset() { b.d = b.lo }
