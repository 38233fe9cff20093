package seqgen

import (
	"context"
	"errors"
	"sync/atomic"
)

// redisDown is the error of a Redis call that failed, passed its deadline,
// or was skipped by the breaker: the signal for take to issue from the DB
// instead.
type redisDown struct{ err error }

func (e redisDown) Error() string { return "seqgen: redis: " + e.err.Error() }
func (e redisDown) Unwrap() error { return e.err }

var (
	errRedisTimeout = errors.New("no reply within Options.RedisTimeout")
	errRedisSkipped = errors.New("skipped: the last calls failed, waiting for Options.BreakerCooldown")
)

// redisCall runs f against Redis within Options.RedisTimeout (or the
// caller's earlier deadline), through the breaker. f runs on a goroutine of
// its own, so the deadline holds whatever the client's timeouts: go-redis
// ignores context deadlines on reads unless ContextTimeoutEnabled. A call
// past its deadline is left to finish under the client's own timeouts; if
// it then succeeds, abandoned (if not nil) undoes what it can (a lease the
// reply granted).
//
// The error is the caller's context error if that ended first, or a
// redisDown.
func redisCall[T any](ctx context.Context, g *Generator, f func(context.Context) (T, error), abandoned func(T)) (T, error) {
	var zero T
	if !g.brk.Allow() {
		return zero, redisDown{errRedisSkipped}
	}
	cctx, cancel := context.WithTimeout(ctx, g.opts.RedisTimeout)
	defer cancel()
	type result struct {
		v   T
		err error
	}
	var claimed atomic.Bool // set by whichever side owns the result
	res := make(chan result, 1)
	go func() {
		v, err := f(cctx)
		if !claimed.CompareAndSwap(false, true) {
			if err == nil && abandoned != nil {
				abandoned(v)
			}
			return
		}
		res <- result{v, err}
	}()
	var r result
	select {
	case r = <-res:
	case <-cctx.Done():
		if claimed.CompareAndSwap(false, true) {
			r.err = errRedisTimeout
		} else {
			r = <-res
		}
	}
	switch {
	case r.err == nil:
		g.brk.Success()
		return r.v, nil
	case ctx.Err() != nil:
		// The caller gave up: no news about Redis.
		return zero, ctx.Err()
	default:
		err := r.err
		if cctx.Err() != nil {
			// Not the caller's deadline: do not let it read as one.
			err = errRedisTimeout
		}
		g.ctr.redisErrors.Add(1)
		g.brk.Failure()
		return zero, redisDown{err}
	}
}
