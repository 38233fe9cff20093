package cacheaside

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// errFailOpen reports that a Redis call failed (or the breaker is open):
// the read falls back to the loader (see failOpen).
var errFailOpen = errors.New("cacheaside: redis failed")

// redisResult is Cache.result for the entity's calls. A reply while the
// breaker is clean (no failing bit in the Cache's health word, health.go)
// is a success with nothing to record: one atomic load.
func (e *Entity[T]) redisResult(ctx context.Context, err error) error {
	if (err == nil || err == redis.Nil) && e.c.health.Load()&failing == 0 {
		return nil
	}
	return e.c.result(ctx, e.ctr, err)
}

// result is the one place that turns a Redis call's error into what the
// caller does next. nil and redis.Nil are successes (the breaker closes)
// and return nil. A failure caused by the caller's own context charges
// nothing and returns the context's error. Any other failure opens the
// breaker a step, is counted as a cache error in ctr, and returns an
// error matching errFailOpen.
func (c *Cache) result(ctx context.Context, ctr *counters, err error) error {
	failed, cerr := c.redisErr(ctx, err)
	switch {
	case cerr != nil:
		return cerr
	case !failed:
		return nil
	}
	ctr.inc(EventCacheError)
	return errors.Join(errFailOpen, err)
}

// note records the result of a Redis call whose failure changes nothing
// for the caller (a store, a lease release, a renewal).
func (e *Entity[T]) note(ctx context.Context, err error) {
	_ = e.redisResult(ctx, err)
}

// failOpen is Get's path when Redis fails (or the breaker is open): the
// loader answers alone, within MaxConcurrentLoads, and nothing is stored.
// Concurrent callers in this process share loads by group commit (see
// commitGroup): a caller never takes the result of a load that began
// before it, which may have read the source of truth before a write that
// completed before the caller began. With strategy None every caller
// loads on its own.
func (e *Entity[T]) failOpen(ctx context.Context, r request[T]) (T, error) {
	f := func(ctx context.Context, id string) (T, error) {
		v, _, err := e.invoke(ctx, id, r.load)
		return v, err
	}
	var v T
	var err error
	if e.p.Strategy.shares() {
		v, err = e.direct.do(ctx, r.id, f)
	} else {
		v, err = f(ctx, r.id)
	}
	return e.result(v, err, r.stale)
}

// loadManyDirect is GetMany's fail-open path: this caller loads every id
// in one call (shared with nobody), and nothing is stored.
func (e *Entity[T]) loadManyDirect(ctx context.Context, items []item, load BatchLoader[T], out map[string]T) (map[string]T, error) {
	found, _, err := e.invokeMany(ctx, ids(items), load)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return out, err
	}
	for _, it := range items {
		if v, ok := found[it.id]; ok {
			out[it.id] = v
		}
	}
	return out, nil
}
