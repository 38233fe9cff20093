package cacheaside

import (
	"sync/atomic"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// health is the Cache's one word of read-path state: the conditions under
// which a read may not simply ask Redis, a bit each. It is zero while all
// is well, and then the read gate (gate.go) and the reply of a Redis call
// (redisResult) cost an atomic load each; a bit set sends them the long
// way, through the checks that own the condition (which still decide: the
// bit only says "look").
//
// Each bit is set before its condition can matter to a read that begins
// afterwards (under the owner's lock, before the call that caused it
// returns) and cleared only once the condition is gone.
type health struct{ atomic.Uint32 }

const (
	// recovering: a recovery gate closed (recovery.go; set and cleared
	// with recovery.closed, under recovery.mu).
	recovering uint32 = 1 << iota
	// holding: invalidations wait for the retrier (retry.go; set and
	// cleared with retrier.n, under retrier.mu).
	holding
	// failing: the breaker counts failures or is open (set by redisErr
	// with each failure; cleared by the next call Redis answers, which
	// closes the breaker: Cache.answered).
	failing
)

// set sets bit.
func (h *health) set(bit uint32) {
	if testswitch.HealthBitsOff.Load() {
		return
	}
	h.Or(bit)
}

// mark sets bit when on, clears it otherwise.
func (h *health) mark(bit uint32, on bool) {
	if on {
		h.set(bit)
	} else {
		h.And(^bit)
	}
}
