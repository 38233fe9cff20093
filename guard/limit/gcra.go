package limit

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

//go:embed gcra.lua
var gcraLua string

var gcraScript = script.New(gcraLua)

// Rate is a sustained rate: Limit calls per Period.
type Rate struct {
	// Limit is the number of calls per Period. Required, >= 1.
	Limit int
	// Period is the time Limit calls take at the sustained rate. Required,
	// > 0, at least Limit microseconds.
	Period time.Duration
}

// PerSecond returns the rate of n calls per second.
func PerSecond(n int) Rate { return Rate{Limit: n, Period: time.Second} }

// PerMinute returns the rate of n calls per minute.
func PerMinute(n int) Rate { return Rate{Limit: n, Period: time.Minute} }

// PerHour returns the rate of n calls per hour.
func PerHour(n int) Rate { return Rate{Limit: n, Period: time.Hour} }

// interval returns the time between two calls at the rate, in whole
// microseconds (rounded to the nearest), or 0 if the rate is invalid.
func (r Rate) interval() int64 {
	us := r.Period.Microseconds()
	if r.Limit < 1 || us < int64(r.Limit) {
		return 0
	}
	return (us + int64(r.Limit)/2) / int64(r.Limit)
}

// GCRA configures NewGCRA: a token bucket refilled at Rate that holds at
// most Burst tokens.
type GCRA struct {
	// Rate is the sustained rate. Required. Its emission interval
	// (Period / Limit) is rounded to a whole microsecond.
	Rate Rate
	// Burst is how many calls an idle key allows at once. Default (0):
	// Rate.Limit.
	Burst int
}

// NewGCRA returns a Limiter with token-bucket semantics computed by the
// generic cell rate algorithm: an idle key allows cfg.Burst calls at once,
// then one call per emission interval (Rate.Period / Rate.Limit). RetryAfter
// is exact: the call would be allowed after exactly that long. State: one
// number per key, O(1).
func NewGCRA(client Client, cfg GCRA, opts *Options) (Limiter, error) {
	interval := cfg.Rate.interval()
	if cfg.Burst == 0 {
		cfg.Burst = cfg.Rate.Limit
	}
	if interval < 1 || cfg.Burst < 1 || float64(interval)*float64(cfg.Burst) >= 1<<50 {
		return nil, fmt.Errorf("%w: gcra: want Rate.Limit >= 1, Rate.Period >= Rate.Limit µs, Burst >= 0, got %+v", ErrInvalid, cfg)
	}
	return newLimiter(client, "gcra", cfg.Burst, cfg.Rate, opts, gcraScript, func(n int) []any {
		return []any{interval, cfg.Burst, n}
	})
}
