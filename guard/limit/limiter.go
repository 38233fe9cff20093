package limit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/asidekit/asidekit/internal/keys"
	"github.com/asidekit/asidekit/internal/script"
)

// limiter is the Limiter of every algorithm: what differs is the script and
// its arguments. All fields are set by the constructor and never change.
type limiter struct {
	client   Client
	script   *script.Script
	ns       string
	algo     string // part of the hash tag: "fw", "sl", "sw", "gcra", "fun"
	limit    int    // Result.Limit, and the largest n AllowN accepts
	maxN     int    // if > 0, the largest n AllowN accepts, when below limit
	failOpen bool
	local    *local // nil without Options.LocalFallback
	// args returns ARGV for a call of n.
	args func(n int) []any
	g    *guard
	ctr  counters
}

// newLimiter returns a limiter of limit calls at once, refilled at rate.
func newLimiter(client Client, algo string, limit int, rate Rate, opts *Options, script *script.Script, args func(n int) []any) (*limiter, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	o, err := opts.init()
	if err != nil {
		return nil, err
	}
	return &limiter{
		client: client, script: script, ns: o.Namespace, algo: algo, limit: limit,
		failOpen: o.FailOpen, local: newLocal(limit, rate, o.LocalFallback), args: args, g: newGuard(client, o),
	}, nil
}

// stateKey returns the key that holds the state of key.
func stateKey(ns, algo, key string) (string, error) {
	esc, err := keys.Escape(key)
	if err != nil {
		return "", fmt.Errorf("%w: key: %w", ErrInvalid, err)
	}
	return ns + ":rl:{" + algo + ":" + esc + "}", nil
}

func (l *limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.AllowN(ctx, key, 1)
}

func (l *limiter) AllowN(ctx context.Context, key string, n int) (Result, error) {
	res, err := l.allowN(ctx, key, n)
	l.ctr.count(res.Allowed, err)
	return res, err
}

func (l *limiter) allowN(ctx context.Context, key string, n int) (Result, error) {
	top := l.limit
	if l.maxN > 0 && l.maxN < top {
		top = l.maxN
	}
	if n < 1 || n > top {
		return Result{Limit: l.limit}, fmt.Errorf("%w: n = %d, want 1 to %d", ErrInvalid, n, top)
	}
	k, err := stateKey(l.ns, l.algo, key)
	if err != nil {
		return Result{Limit: l.limit}, err
	}
	ks, args := []string{k}, l.args(n)
	var reply []int64
	err = l.g.do(ctx, func(ctx context.Context) error {
		var err error
		reply, err = l.script.Run(ctx, l.client, ks, args...).Int64Slice()
		return err
	})
	if err == nil {
		var res Result
		if res, err = parseReply(reply); err == nil {
			res.Limit = l.limit
			return res, nil
		}
	}
	if l.local != nil && ctx.Err() == nil {
		l.ctr.local.Add(1)
		return l.local.allow(key, n, l.limit), nil
	}
	return l.failed(ctx, err)
}

// failed turns a Redis error into the Result and error AllowN returns.
func (l *limiter) failed(ctx context.Context, err error) (Result, error) {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// The caller gave up: that is no Redis failure, never fail open.
		if !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		return Result{Limit: l.limit}, fmt.Errorf("limit: %w", err)
	}
	if l.failOpen {
		return Result{Allowed: true, Limit: l.limit}, fmt.Errorf("%w: %w", ErrFailedOpen, err)
	}
	if errors.Is(err, ErrBreakerOpen) {
		return Result{Limit: l.limit, RetryAfter: l.g.retryAfter()}, err
	}
	return Result{Limit: l.limit}, fmt.Errorf("limit: redis: %w", err)
}

// parseReply reads the reply every limiter script returns:
// {allowed (0 or 1), remaining, retry after µs, reset after µs, now µs}.
func parseReply(v []int64) (Result, error) {
	if len(v) != 5 {
		return Result{}, fmt.Errorf("limit: unexpected script reply %v", v)
	}
	return Result{
		Allowed:    v[0] == 1,
		Remaining:  int(max(v[1], 0)),
		RetryAfter: fromMicros(max(v[2], 0)),
		ResetAfter: fromMicros(max(v[3], 0)),
		at:         v[4],
	}, nil
}

func (l *limiter) Wait(ctx context.Context, key string) error {
	return wait(ctx, func() (Result, error) { return l.AllowN(ctx, key, 1) })
}

// minWait is the shortest sleep between two attempts of Wait, so that a
// RetryAfter rounded down to zero cannot make it spin.
const minWait = time.Millisecond

// wait calls try until it allows, sleeping RetryAfter in between.
func wait(ctx context.Context, try func() (Result, error)) error {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		res, err := try()
		if err != nil {
			return err
		}
		if res.Allowed {
			return nil
		}
		d := max(res.RetryAfter, minWait)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return fmt.Errorf("%w: the next attempt, in %v, is past the context deadline: %w", ErrLimited, d, context.DeadlineExceeded)
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("limit: wait: %w", ctx.Err())
		case <-timer.C:
		}
	}
}

func (l *limiter) Reset(ctx context.Context, key string) error {
	k, err := stateKey(l.ns, l.algo, key)
	if err != nil {
		return err
	}
	return reset(ctx, l.g, l.client, k)
}

// reset deletes the state key k, through g.
func reset(ctx context.Context, g *guard, c Client, k string) error {
	err := g.do(ctx, func(ctx context.Context) error { return c.Del(ctx, k).Err() })
	if err != nil {
		return fmt.Errorf("limit: reset: %w", err)
	}
	return nil
}

// micros returns d in whole microseconds, rounded up.
func micros(d time.Duration) int64 { return ceilDiv(d, time.Microsecond) }

// millis returns d in whole milliseconds, rounded up.
func millis(d time.Duration) int64 { return ceilDiv(d, time.Millisecond) }

// ceilDiv returns d / unit rounded up, for d >= 0, without the overflow of
// (d + unit - 1) / unit near the largest Duration (which would turn a
// window of centuries into a negative one: no limit at all).
func ceilDiv(d, unit time.Duration) int64 {
	q := int64(d / unit)
	if d%unit > 0 {
		q++
	}
	return q
}

// fromMicros converts a script's microseconds to a Duration, saturating
// instead of overflowing for spans past 292 years.
func fromMicros(us int64) time.Duration {
	if us > math.MaxInt64/int64(time.Microsecond) {
		return math.MaxInt64
	}
	return time.Duration(us) * time.Microsecond
}

// maxExact is the largest limit, capacity or count the scripts handle
// exactly: Lua numbers are doubles.
const maxExact = 1 << 53
