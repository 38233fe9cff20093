package seqgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
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

// breaker skips Redis after BreakerFailures consecutive failures, for
// BreakerCooldown; then one call at a time probes it, and the first
// success closes the breaker. It counts calls, not numbers: a dead Redis
// then costs one deadline per cooldown, not one per call.
type breaker struct {
	threshold int
	cooldown  time.Duration

	mu      sync.Mutex
	fails   int       // guarded by mu: consecutive failures
	until   time.Time // guarded by mu: no call before this once open
	probing bool      // guarded by mu: a probe is in flight
}

// outcome of one Redis call, for the breaker.
type outcome int

const (
	callOK      outcome = iota
	callFailed          // Redis failed or passed the deadline
	callUnknown         // the caller gave up first: no news about Redis
)

// allow reports whether a call may go to Redis, and whether it is the probe
// of an open breaker (the caller must then report its outcome to done).
func (b *breaker) allow() (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fails < b.threshold {
		return true, false
	}
	if b.probing || time.Now().Before(b.until) {
		return false, false
	}
	b.probing = true
	return true, true
}

func (b *breaker) done(probe bool, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		b.probing = false
	}
	switch o {
	case callOK:
		b.fails = 0
	case callFailed:
		b.fails++
		if b.fails >= b.threshold {
			b.until = time.Now().Add(b.cooldown)
		}
	}
}

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
	ok, probe := g.brk.allow()
	if !ok {
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
		g.brk.done(probe, callOK)
		return r.v, nil
	case ctx.Err() != nil:
		g.brk.done(probe, callUnknown)
		return zero, ctx.Err()
	default:
		err := r.err
		if cctx.Err() != nil {
			// Not the caller's deadline: do not let it read as one.
			err = errRedisTimeout
		}
		g.ctr.redisErrors.Add(1)
		g.brk.done(probe, callFailed)
		return zero, redisDown{err}
	}
}
