package limit

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

//go:embed sliding_window.lua
var slidingWindowLua string

var slidingWindowScript = script.New(slidingWindowLua)

// SlidingWindow configures NewSlidingWindow: about Limit calls per Window,
// with the window sliding.
type SlidingWindow struct {
	// Limit is the number of calls allowed per window. Required, >= 1.
	Limit int
	// Window is the length of a window, rounded up to a whole millisecond.
	// Required, > 0; Limit × Window in milliseconds must stay below 2^52.
	Window time.Duration
}

// NewSlidingWindow returns a Limiter with the two-counter approximation of a
// sliding window: windows aligned on the Unix epoch, and a call is allowed
// if previous × (the share of the previous window the sliding window still
// covers) + current + n <= Limit. It never allows more than Limit calls in
// one aligned window, smooths the boundary burst of a fixed window, and
// keeps O(1) state per key (a hash of three fields). The estimate assumes
// the previous window's calls were spread evenly, so it may allow somewhat
// more or fewer than an exact sliding log in a given interval.
func NewSlidingWindow(client Client, cfg SlidingWindow, opts *Options) (Limiter, error) {
	window := millis(cfg.Window)
	if cfg.Limit < 1 || window < 1 || float64(cfg.Limit)*float64(window) >= 1<<52 {
		return nil, fmt.Errorf("%w: sliding window: want Limit >= 1, Window > 0, Limit × Window(ms) < 2^52, got %+v", ErrInvalid, cfg)
	}
	return newLimiter(client, "sw", cfg.Limit, Rate{Limit: cfg.Limit, Period: cfg.Window}, opts, slidingWindowScript, func(n int) []any {
		return []any{cfg.Limit, window, n}
	})
}
