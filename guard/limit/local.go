package limit

import (
	"math"
	"sync"
	"time"
)

// local is the in-process limit a limiter falls back to while Redis fails
// (Options.LocalFallback): per key, a token bucket holding the limiter's
// limit divided by the number of processes that share it, refilled at the
// limiter's rate divided likewise. It is an approximation (the processes
// do not see each other's calls), not the shared limit: it keeps an outage
// from meaning no limit at all.
type local struct {
	capacity float64 // tokens a bucket holds
	perSec   float64 // tokens added per second
	now      func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxLocalKeys bounds the buckets kept: past it, the full ones (keys idle
// long enough to have refilled) are dropped.
const maxLocalKeys = 10_000

// newLocal returns the fallback of a limiter of limit calls at rate, shared
// by procs processes; nil when procs <= 0.
func newLocal(limit int, rate Rate, procs int) *local {
	if procs <= 0 {
		return nil
	}
	p := float64(procs)
	return &local{
		capacity: max(1, math.Ceil(float64(limit)/p)),
		perSec:   float64(rate.Limit) / p / rate.Period.Seconds(),
		now:      time.Now,
		buckets:  map[string]*bucket{},
	}
}

// allow takes n tokens of key's bucket if it has them.
func (l *local) allow(key string, n int, limit int) Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxLocalKeys {
			l.prune(now)
		}
		b = &bucket{tokens: l.capacity, at: now}
		l.buckets[key] = b
	}
	b.tokens = min(l.capacity, b.tokens+now.Sub(b.at).Seconds()*l.perSec)
	b.at = now
	res := Result{Limit: limit}
	if need := float64(n); b.tokens >= need {
		b.tokens -= need
		res.Allowed = true
	} else {
		res.RetryAfter = l.after(need - b.tokens)
	}
	res.Remaining = int(b.tokens)
	res.ResetAfter = l.after(l.capacity - b.tokens)
	return res
}

// after is how long the bucket takes to gain tokens.
func (l *local) after(tokens float64) time.Duration {
	return time.Duration(math.Ceil(tokens / l.perSec * float64(time.Second)))
}

// prune drops the buckets that are full by now.
func (l *local) prune(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.perSec >= l.capacity {
			delete(l.buckets, k)
		}
	}
}
