package cacheaside

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/internal/backoff"
)

// pending is an invalidation waiting for a background retry.
type pending struct {
	key   string // entry key
	verPX int64
	ctr   *counters
	seq   uint64 // set by add; a later add of the same key supersedes it
	lsn   uint64 // write position to record in the new version (lsn.go); 0 for none
}

// Backoff of the invalidation retrier. retryMax is short because other
// processes' settle windows wait for it (see settle.go), and cheap: while
// Redis is down the breaker turns a try into no call at all.
const (
	retryMin     = 50 * time.Millisecond
	retryMax     = time.Second
	retryTimeout = 2 * time.Second
)

// retrier retries failed invalidations in the background, with jittered
// exponential backoff, until they succeed or the Cache is closed. Its
// goroutine runs only while something is pending. A key whose
// invalidation is pending is not read from Redis (holds): Redis may still
// hold the value the invalidation must remove, so reads of it load from
// the loader, uncached, until the invalidation is applied. When Redis
// answers again after failures (wake), the retrier tries at once instead
// of waiting for its backoff.
type retrier struct {
	c *Cache

	mu      sync.Mutex
	pending map[string]pending // guarded by mu; by entry key
	running bool               // guarded by mu
	seq     uint64             // guarded by mu

	n    atomic.Int64  // len(pending), read without mu by holds
	poke chan struct{} // wakes the loop; buffered, one pending wake-up

	// ignore, for tests only, turns the rule of holds off.
	ignore bool
}

// idle reports whether no invalidation is pending, so that no key is
// held: one atomic load.
func (r *retrier) idle() bool { return r.n.Load() == 0 || r.ignore }

// holds reports whether key's invalidation is pending. It costs one
// atomic load while nothing is (see idle).
func (r *retrier) holds(key string) bool {
	if r.idle() {
		return false
	}
	r.mu.Lock()
	_, ok := r.pending[key]
	r.mu.Unlock()
	return ok
}

// wake makes a sleeping loop try at once.
func (r *retrier) wake() {
	if r.n.Load() == 0 {
		return
	}
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

func (r *retrier) add(ps []pending) {
	if len(ps) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = make(map[string]pending)
	}
	for _, p := range ps {
		r.seq++
		p.seq = r.seq
		p.lsn = maxLSN(p.lsn, r.pending[p.key].lsn)
		r.pending[p.key] = p
		p.ctr.inc(EventInvalidationDeferred)
	}
	r.n.Store(int64(len(r.pending)))
	if !r.running {
		r.running = r.c.goBackground(r.loop)
	}
}

// size returns the number of queued invalidations.
func (r *retrier) size() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

func (r *retrier) loop() {
	retry := backoff.New(retryMin, retryMax)
	timer := time.NewTimer(retry.Next())
	defer timer.Stop()
	for {
		select {
		case <-r.c.base.Done():
			r.final()
			return
		case <-timer.C:
		case <-r.poke:
			retry.Reset()
		}
		r.mu.Lock()
		batch := make([]pending, 0, len(r.pending))
		for _, p := range r.pending {
			batch = append(batch, p)
		}
		if len(batch) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()

		for _, p := range batch {
			p.ctr.inc(EventInvalidationRetry)
		}
		var failed []pending
		var err error
		if r.c.br.Allow() {
			ctx, cancel := context.WithTimeout(r.c.base, retryTimeout)
			failed, err = invalidate(ctx, r.c, batch)
			if err != nil && !errors.Is(err, errShortfall) {
				r.c.redisErr(ctx, err)
			}
			cancel()
		} else {
			failed = batch
		}
		still := make(map[string]bool, len(failed))
		for _, p := range failed {
			still[p.key] = true
		}
		r.mu.Lock()
		for _, p := range batch {
			if !still[p.key] && r.pending[p.key].seq == p.seq {
				delete(r.pending, p.key)
			}
		}
		r.n.Store(int64(len(r.pending)))
		r.mu.Unlock()
		if len(failed) == 0 {
			retry.Reset()
		}
		timer.Reset(retry.Next())
	}
}

// final makes one last attempt at the queued invalidations when the Cache
// closes, bounded by retryTimeout, and drops what still fails (the TTLs
// bound the staleness).
func (r *retrier) final() {
	r.mu.Lock()
	batch := make([]pending, 0, len(r.pending))
	for _, p := range r.pending {
		batch = append(batch, p)
	}
	r.pending = nil
	r.n.Store(0)
	r.running = false
	r.mu.Unlock()
	if len(batch) == 0 || !r.c.br.Allow() {
		return
	}
	for _, p := range batch {
		p.ctr.inc(EventInvalidationRetry)
	}
	ctx, cancel := context.WithTimeout(context.Background(), retryTimeout)
	defer cancel()
	_, _ = invalidate(ctx, r.c, batch)
}
