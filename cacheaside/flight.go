package cacheaside

import (
	"context"
	"sync"
)

// flight shares one call per key among concurrent callers in this process,
// like golang.org/x/sync/singleflight, but every caller waits on its own
// context: a caller whose context ends leaves at once, and the shared call
// (which runs on a context detached from any one caller) is cancelled when
// its last caller has left. The zero flight is ready to use.
type flight[T any] struct {
	mu    sync.Mutex
	calls map[string]*flightCall[T] // guarded by mu
}

type flightCall[T any] struct {
	done   chan struct{} // closed when val and err are set
	val    T
	err    error
	refs   int // guarded by flight.mu: callers still waiting
	cancel context.CancelFunc
}

// do runs fn once for all concurrent callers with the same key. fn must
// not panic (loaders are called through callLoader, which recovers).
func (g *flight[T]) do(ctx context.Context, key string, fn func(context.Context) (T, error)) (T, error) {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = make(map[string]*flightCall[T])
	}
	c, ok := g.calls[key]
	if ok {
		c.refs++
	} else {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		c = &flightCall[T]{done: make(chan struct{}), refs: 1, cancel: cancel}
		g.calls[key] = c
		go g.run(fctx, key, c, fn)
	}
	g.mu.Unlock()

	select {
	case <-c.done:
		return c.val, c.err
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
		return zero, ctx.Err()
	}
}

func (g *flight[T]) run(ctx context.Context, key string, c *flightCall[T], fn func(context.Context) (T, error)) {
	defer func() {
		g.mu.Lock()
		if g.calls[key] == c {
			delete(g.calls, key)
		}
		g.mu.Unlock()
		c.cancel()
		close(c.done)
	}()
	c.val, c.err = fn(ctx)
}
