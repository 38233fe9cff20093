package cacheaside

import (
	"context"

	"github.com/asidekit/asidekit/internal/keys"
)

// Cached returns the value the cache holds for id, from the near cache or
// else Redis, without loading, storing, refreshing or taking a lease: a
// look, not a read through. ok is false when there is no value to give: a
// miss, a "not found" or expired entry, an invalid id, or a read that the
// gate sends around the cache (a recovery gate, a pending invalidation
// of id, the breaker) or that Redis fails. A value it returns is, like
// Get's, never older than a write that completed before Cached began
// (within Grace, a stale value the Policy would serve). It counts no hit
// or miss; a Redis failure counts as Get's would.
//
// repo reads a row's unique columns with it before a write whose
// statement is guarded by them (the database then checks that they were
// still so).
func (e *Entity[T]) Cached(ctx context.Context, id string) (v T, ok bool) {
	esc, err := keys.Escape(id)
	if err != nil || ctx.Err() != nil {
		return v, false
	}
	var key string
	g := readGate[T]{e: e}
	switch via, _, err := g.pass(&key, esc); via {
	case toLocal:
		return g.v, err == nil
	case toRedis:
	default:
		return v, false
	}
	f, err := e.reads.do(ctx, key, e.getEntry)
	if e.redisResult(ctx, err) != nil {
		return v, false
	}
	switch vw := e.classifyFetched(f, e.now()); vw.state {
	case stateFresh, stateDue, stateStale:
		return vw.v, true
	}
	return v, false
}
