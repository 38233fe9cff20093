package limit

import (
	_ "embed"
	"fmt"

	"github.com/asidekit/asidekit/internal/script"
)

//go:embed funnel.lua
var funnelLua string

var funnelScript = script.New(funnelLua)

// Funnel configures NewFunnel: a leaky bucket of Capacity units that leaks
// at Leak.
type Funnel struct {
	// Capacity is how many units the funnel holds: the most calls an idle
	// key allows at once. Required, in [1, 2^53].
	Capacity int
	// Leak is the rate at which the funnel empties: Leak.Limit units per
	// Leak.Period, continuously (not in steps). Required.
	Leak Rate
}

// NewFunnel returns a Limiter with a leaky bucket (a "funnel") per key: each
// call pours one unit in (n for AllowN), the funnel leaks continuously at
// cfg.Leak, and a call that would make it overflow cfg.Capacity is refused.
// The level and its time live in a Redis hash, so every process shares the
// funnel. Its behaviour equals a GCRA with Burst = Capacity; the state is a
// fractional level instead of an arrival time. O(1) per key.
func NewFunnel(client Client, cfg Funnel, opts *Options) (Limiter, error) {
	period := cfg.Leak.Period.Microseconds()
	if cfg.Capacity < 1 || int64(cfg.Capacity) > maxExact || cfg.Leak.Limit < 1 || period < 1 {
		return nil, fmt.Errorf("%w: funnel: want Capacity in [1, 2^53], Leak.Limit >= 1, Leak.Period >= 1µs, got %+v", ErrInvalid, cfg)
	}
	return newLimiter(client, "fun", cfg.Capacity, cfg.Leak, opts, funnelScript, func(n int) []any {
		return []any{cfg.Capacity, cfg.Leak.Limit, period, n}
	})
}
