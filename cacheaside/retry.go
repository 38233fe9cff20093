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
	drop  bool   // delete the version instead of replacing it (InvalidateAll: drop.lua)
}

// Backoff of the invalidation retrier. retryMax is short because other
// processes' settle windows wait for it (see settle.go), and cheap: while
// Redis is down the breaker turns a try into no call at all.
const (
	retryMin     = 50 * time.Millisecond
	retryMax     = time.Second
	retryTimeout = 2 * time.Second
)

// retrier retries what failed in the background, with jittered
// exponential backoff, until it succeeds or the Cache is closed: the
// invalidations of keys (Entity.Invalidate, Set, SetIfVersion), and the
// other effects that Apply queued (InvalidateAll, Bump, Patch,
// AddToFilter, Distrust), in order. It is the only retrier of the
// Cache's work, and counts it in the process's RetryStats. Its goroutine
// runs only while something is pending. A key whose invalidation is
// pending is not read from Redis (holds): Redis may still hold the value
// the invalidation must remove, so reads of it load from the loader,
// uncached, until the invalidation is applied. When Redis answers again
// after failures (wake), the retrier tries at once instead of waiting for
// its backoff.
type retrier struct {
	c *Cache

	mu       sync.Mutex
	pending  map[string]pending // guarded by mu; by entry key
	effects  Effects            // guarded by mu; Apply's failed effects but the invalidations of keys
	inflight int                // guarded by mu; ids and keys of effects taken out for a try
	total    int                // guarded by mu; what retryStats.pending counts of this retrier
	running  bool               // guarded by mu
	streak   bool               // guarded by mu; Apply logged a failure, the end not yet logged
	seq      uint64             // guarded by mu

	n    atomic.Int64  // len(pending), read without mu by holds
	m    atomic.Int64  // effects.Len() + inflight, read without mu by wake
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
	if r.n.Load() == 0 && r.m.Load() == 0 {
		return
	}
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// add queues the invalidations ps; one of a key already queued
// supersedes it. Past maxPendingUpkeep ids and keys queued in the
// process, a new key is dropped instead (counted and logged).
func (r *retrier) add(ps []pending) {
	if len(ps) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = make(map[string]pending)
	}
	dropped := 0
	for _, p := range ps {
		old, ok := r.pending[p.key]
		if !ok && retryStats.pending.Load() >= maxPendingUpkeep {
			dropped++
			continue
		}
		r.seq++
		p.seq = r.seq
		p.lsn = maxLSN(p.lsn, old.lsn)
		r.pending[p.key] = p
		p.ctr.inc(EventInvalidationDeferred)
		r.account()
	}
	if dropped > 0 {
		logDropped(dropped, errors.New("invalidation failed"))
	}
	r.start()
}

// addEffects queues w, effects that failed, after those queued already.
// When they would take the ids and keys queued in the process past
// maxPendingUpkeep, they are dropped instead (counted and logged) and
// addEffects returns false.
func (r *retrier) addEffects(w *Effects, err error) bool {
	if w.Len() == 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if retryStats.pending.Load()+int64(w.Len()) > maxPendingUpkeep {
		logDropped(w.Len(), err)
		return false
	}
	r.effects.Merge(w)
	r.account()
	r.start()
	return true
}

// account makes the counts of what is queued (n, m, retryStats.pending)
// match it; r.mu is held.
func (r *retrier) account() {
	t := len(r.pending) + r.effects.Len() + r.inflight
	retryStats.pending.Add(int64(t - r.total))
	r.total = t
	r.n.Store(int64(len(r.pending)))
	r.c.health.mark(holding, len(r.pending) > 0)
	r.m.Store(int64(r.effects.Len() + r.inflight))
}

// start starts the loop unless it runs; r.mu is held. On a closed Cache
// nothing will retry: what is queued is dropped (its entries expire with
// their TTL), as Close drops it.
func (r *retrier) start() {
	if r.running {
		return
	}
	if r.running = r.c.goBackground(r.loop); !r.running {
		r.pending = nil
		r.effects.Reset()
		r.account()
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
		w := r.take()
		if len(batch) == 0 && w.Len() == 0 {
			r.running = false
			if r.streak {
				r.streak = false
				logApplied()
			}
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()

		for _, p := range batch {
			p.ctr.inc(EventInvalidationRetry)
		}
		ctx, cancel := context.WithTimeout(r.c.base, retryTimeout)
		failed := r.tryKeys(ctx, batch)
		cancel()
		// After the keys, whose try may close the breaker: each effect
		// goes through its own (the Cache's, a filter's) and fails fast
		// while it is open; the loop's Allow would take a half-open probe
		// that the effect could then not make.
		ctx, cancel = context.WithTimeout(r.c.base, retryTimeout)
		effectsFailed := r.tryEffects(ctx, &w)
		cancel()
		still := make(map[string]bool, len(failed))
		for _, p := range failed {
			still[p.key] = true
		}
		r.mu.Lock()
		for _, p := range batch {
			if still[p.key] {
				continue
			}
			retryStats.retried.Add(1)
			if r.pending[p.key].seq == p.seq {
				delete(r.pending, p.key)
			}
		}
		r.putBack(effectsFailed)
		r.mu.Unlock()
		if len(failed) == 0 && effectsFailed.Len() == 0 {
			retry.Reset()
		}
		timer.Reset(retry.Next())
	}
}

// tryKeys tries the invalidations of batch, when the breaker allows, and
// returns those that failed.
func (r *retrier) tryKeys(ctx context.Context, batch []pending) []pending {
	if len(batch) == 0 {
		return nil
	}
	if !r.c.br.Allow() {
		return batch
	}
	failed, err := invalidate(ctx, r.c, batch)
	if err != nil && !errors.Is(err, errShortfall) {
		r.c.redisErr(ctx, err)
	}
	return failed
}

// take takes the queued effects out for a try; they stay counted
// (inflight) until putBack. r.mu is held.
func (r *retrier) take() Effects {
	w := r.effects
	r.effects = Effects{}
	r.inflight = w.Len()
	return w
}

// putBack queues failed, what a try of the taken effects left, before the
// effects queued meanwhile. r.mu is held.
func (r *retrier) putBack(failed *Effects) {
	r.inflight = 0
	if failed.Len() > 0 {
		back := *failed
		back.Merge(&r.effects)
		r.effects = back
	}
	r.account()
}

// tryEffects tries w and returns what failed (empty when nothing did),
// counting what it applied.
func (r *retrier) tryEffects(ctx context.Context, w *Effects) *Effects {
	if w.Len() == 0 {
		return &Effects{}
	}
	failed, held, _ := w.try(ctx)
	if failed == nil {
		failed = &Effects{}
	}
	retryStats.retried.Add(int64(w.Len() - failed.Len() - held))
	return failed
}

// final makes one last attempt at what is queued when the Cache closes,
// bounded by retryTimeout, and drops what still fails (the TTLs bound the
// staleness).
func (r *retrier) final() {
	r.mu.Lock()
	batch := make([]pending, 0, len(r.pending))
	for _, p := range r.pending {
		batch = append(batch, p)
	}
	w := r.effects
	r.pending = nil
	r.effects = Effects{}
	r.account()
	r.running = false
	r.streak = false
	r.mu.Unlock()
	if len(batch) == 0 && w.Len() == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), retryTimeout)
	defer cancel()
	if len(batch) > 0 && r.c.br.Allow() {
		for _, p := range batch {
			p.ctr.inc(EventInvalidationRetry)
		}
		failed, _ := invalidate(ctx, r.c, batch)
		retryStats.retried.Add(int64(len(batch) - len(failed)))
	}
	r.tryEffects(ctx, &w)
}
