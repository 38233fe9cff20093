package cacheaside

import (
	"context"
	"errors"
	"sync"
)

// ErrLoaderGoexit is the error of every caller of a shared load whose
// loader called runtime.Goexit (t.FailNow in a test, for example) instead of
// returning: there is no value to give them.
var ErrLoaderGoexit = errors.New("cacheaside: loader called runtime.Goexit")

// outcome says which callers of a shared load may use its result without
// breaking the guarantee that no read returns a value older than a write
// (DB change + Invalidate) that completed before the read began.
type outcome int

const (
	// validAll: every caller may use the result (errors, fail-open loads).
	validAll outcome = iota
	// validMarked: the callers that joined before the load's last mark()
	// may use it. The load calls mark() just before the Redis step that
	// validates its result (the version-checked store, or the read of a
	// current entry): a caller that joined earlier is covered by it.
	validMarked
	// validLeader: only the caller that started the load may use it (the
	// store was refused: the id was invalidated during the load). The
	// starter is always safe: its read began before the load read the
	// version.
	validLeader
)

// flight shares one call per key among concurrent callers in this process,
// like golang.org/x/sync/singleflight, with two differences. Every caller
// waits on its own context: a caller whose context ends leaves at once, and
// the shared call (on a context detached from any one caller) is cancelled
// when its last caller has left. And the call reports, through its outcome
// and mark, which callers may use its result; the others are told to retry.
// The zero flight is ready to use.
type flight[T any] struct {
	mu    sync.Mutex
	calls map[string]*flightCall[T] // guarded by mu
}

type flightCall[T any] struct {
	done     chan struct{} // closed when val, err and out are set
	val      T
	err      error
	out      outcome
	refs     int // guarded by flight.mu: callers still waiting
	joins    int // guarded by flight.mu: callers that joined so far
	validTo  int // guarded by flight.mu: joins covered by the last mark
	cancel   context.CancelFunc
	markFunc func()
}

// do runs fn once for all concurrent callers with the same key. It returns
// retry = true to a caller that may not use the result (see outcome); the
// caller should start over. fn must not panic (loaders are called through
// callLoader, which recovers).
func (g *flight[T]) do(ctx context.Context, key string, fn func(ctx context.Context, mark func()) (T, outcome, error)) (v T, retry bool, err error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = make(map[string]*flightCall[T])
	}
	c, joined := g.calls[key]
	if joined {
		c.refs++
	} else {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &flightCall[T]{done: make(chan struct{}), cancel: cancel, refs: 1}
		c.markFunc = func() {
			g.mu.Lock()
			c.validTo = c.joins
			g.mu.Unlock()
		}
		g.calls[key] = c
		go g.run(fctx, key, c, fn)
	}
	c.joins++
	me := c.joins
	g.mu.Unlock()

	select {
	case <-c.done:
		switch c.out {
		case validMarked:
			g.mu.Lock()
			retry = me > c.validTo
			g.mu.Unlock()
		case validLeader:
			retry = joined
		}
		return c.val, retry, c.err
	case <-ctx.Done():
		g.mu.Lock()
		c.refs--
		if c.refs == 0 {
			c.cancel()
			if g.calls[key] == c {
				delete(g.calls, key)
			}
		}
		g.mu.Unlock()
		var zero T
		return zero, false, ctx.Err()
	}
}

func (g *flight[T]) run(ctx context.Context, key string, c *flightCall[T], fn func(context.Context, func()) (T, outcome, error)) {
	returned := false
	defer func() {
		if !returned { // runtime.Goexit: fn never returned
			c.out, c.err = validAll, ErrLoaderGoexit
		}
		g.mu.Lock()
		if g.calls[key] == c {
			delete(g.calls, key)
		}
		g.mu.Unlock()
		c.cancel()
		close(c.done)
	}()
	c.val, c.out, c.err = fn(ctx, c.markFunc)
	returned = true
}

// noMark is the mark of a load that nobody joins.
func noMark() {}
