package limit

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

//go:embed fixed_window.lua
var fixedWindowLua string

var fixedWindowScript = script.New(fixedWindowLua)

// FixedWindow configures NewFixedWindow: at most Limit calls per Window,
// the window starting with its first call.
type FixedWindow struct {
	// Limit is the number of calls allowed per window. Required, in
	// [1, 2^53].
	Limit int
	// Window is the length of a window, rounded up to a whole millisecond.
	// Required, > 0.
	Window time.Duration
	// LockTime, when > 0, turns on the lockout: the first call refused in a
	// window ("too fast") locks the key for LockTime, counted from that
	// call, during which every call is refused; after it a new window
	// starts. A lock may end the window early (LockTime < the rest of the
	// window) or outlast it. Default 0: no lockout.
	LockTime time.Duration
}

// NewFixedWindow returns a Limiter that allows cfg.Limit calls per
// cfg.Window under each key. A window starts with the first call after the
// previous one ended (the counter's expiry is set on the first hit), so a
// burst of 2·Limit calls can pass across a window's end; use NewSlidingLog
// or NewGCRA where that matters. The window is the counter's expiry, so it
// runs on the Redis server's expiry clock (milliseconds, never a client's);
// RetryAfter and ResetAfter come from the key's PTTL, rounded up. State: one
// string per key, O(1).
func NewFixedWindow(client Client, cfg FixedWindow, opts *Options) (Limiter, error) {
	if cfg.Limit < 1 || int64(cfg.Limit) > maxExact || cfg.Window <= 0 || cfg.LockTime < 0 {
		return nil, fmt.Errorf("%w: fixed window: want Limit in [1, 2^53], Window > 0, LockTime >= 0, got %+v", ErrInvalid, cfg)
	}
	window, lock := millis(cfg.Window), millis(cfg.LockTime)
	return newLimiter(client, "fw", cfg.Limit, Rate{Limit: cfg.Limit, Period: cfg.Window}, opts, fixedWindowScript, func(n int) []any {
		return []any{cfg.Limit, window, n, lock}
	})
}
