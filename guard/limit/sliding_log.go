package limit

import (
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

//go:embed sliding_log.lua
var slidingLogLua string

var slidingLogScript = script.New(slidingLogLua)

// SlidingLog configures NewSlidingLog: at most Limit calls in any interval
// of length Window.
type SlidingLog struct {
	// Limit is the number of calls allowed in any window. Required, in
	// [1, 2^53]. The log keeps one sorted-set member (about 50 bytes) per
	// call allowed in the last Window, so a large Limit costs memory.
	Limit int
	// Window is the length of the sliding window, with microsecond
	// resolution. Required, >= 1µs.
	Window time.Duration
}

// MaxSlidingLogN is the largest n a sliding log's AllowN takes, whatever
// its Limit: each call is logged as one sorted-set member by one script,
// which blocks the Redis server for about 2µs per member, so a batch of a
// million would stall every client for seconds.
const MaxSlidingLogN = 10_000

// NewSlidingLog returns a Limiter that allows at most cfg.Limit calls under
// a key in any interval of cfg.Window: exact, with no burst at window
// boundaries. It logs each allowed call's Redis time in a sorted set, so its
// memory is O(Limit) per key. Its AllowN takes n up to Limit or
// MaxSlidingLogN, whichever is smaller.
func NewSlidingLog(client Client, cfg SlidingLog, opts *Options) (Limiter, error) {
	if cfg.Limit < 1 || int64(cfg.Limit) > maxExact || cfg.Window < time.Microsecond {
		return nil, fmt.Errorf("%w: sliding log: want Limit in [1, 2^53], Window >= 1µs, got %+v", ErrInvalid, cfg)
	}
	// Members are "<instance>:<call>:<i>": the instance id is random, the
	// call number counts this instance's calls, i numbers the n calls of
	// one AllowN. Unique across processes, even within one microsecond.
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand panics if it could not read)
	instance := hex.EncodeToString(id[:]) + ":"
	var calls atomic.Uint64
	window := micros(cfg.Window)
	l, err := newLimiter(client, "sl", cfg.Limit, Rate{Limit: cfg.Limit, Period: cfg.Window}, opts, slidingLogScript, func(n int) []any {
		token := instance + strconv.FormatUint(calls.Add(1), 36)
		return []any{cfg.Limit, window, n, token}
	})
	if err != nil {
		return nil, err
	}
	l.maxN = MaxSlidingLogN
	return l, nil
}
