package cacheaside

import (
	"context"
	"sync"
)

// commitGroup shares calls per key among concurrent callers in this
// process by group commit, not by singleflight. A caller never joins a
// call already started: that call may have read its data before the
// caller began, and return a value older than a write that completed
// before it. A caller that finds a call of its key in flight queues for
// the next one instead, which starts as soon as the one in flight returns
// and serves every caller queued for it. So each caller's result comes
// from a call started after the caller began. A caller that finds no call
// in flight makes its own at once, on its own context: a lone caller pays
// nothing.
//
// Entities use it for every Redis GET of Get and for the loads
// of the fail-open path. The zero commitGroup is ready to use.
type commitGroup[V any] struct {
	mu sync.Mutex
	// slots holds the keys with a call in flight, each with the batch of
	// callers queued for the next call (nil when none). Guarded by mu.
	slots map[string]*commitBatch[V]
}

// commitBatch is one call shared by the callers queued for it.
type commitBatch[V any] struct {
	fn      func(context.Context, string) (V, error) // the call of the caller that opened the batch
	done    chan struct{}                            // closed when v and err are set
	v       V                                        // read-only once done
	err     error
	waiters int // guarded by commitGroup.mu: callers still waiting
	ctx     context.Context
	cancel  context.CancelFunc // ends the call when every caller has left
}

// do returns the result of fn(ctx, key), or of the fn of another caller
// of key, from a call started after do was called. A queued caller whose
// ctx ends leaves with ctx.Err(); the call goes on for the others, and is
// not made (or is cancelled) when nobody waits for it any more.
func (g *commitGroup[V]) do(ctx context.Context, key string, fn func(context.Context, string) (V, error)) (V, error) {
	g.mu.Lock()
	nb, busy := g.slots[key]
	if !busy {
		if g.slots == nil {
			g.slots = make(map[string]*commitBatch[V])
		}
		g.slots[key] = nil
		g.mu.Unlock()
		v, err := fn(ctx, key)
		g.mu.Lock()
		if g.slots[key] == nil { // no caller queued meanwhile: the common case
			delete(g.slots, key)
			g.mu.Unlock()
			return v, err
		}
		g.mu.Unlock()
		g.sendNext(key, false)
		return v, err
	}
	if nb == nil {
		// The batch's call runs on a context of its own: it keeps the
		// values of the caller that opened it (tracing) but not its
		// cancellation.
		bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		nb = &commitBatch[V]{fn: fn, done: make(chan struct{}), ctx: bctx, cancel: cancel}
		g.slots[key] = nb
	}
	nb.waiters++
	g.mu.Unlock()

	select {
	case <-nb.done:
		return nb.v, nb.err
	case <-ctx.Done():
		g.mu.Lock()
		nb.waiters--
		if nb.waiters == 0 {
			if next, ok := g.slots[key]; ok && next == nb {
				g.slots[key] = nil // not started yet: never start it
			}
			nb.cancel()
		}
		g.mu.Unlock()
		var zero V
		return zero, ctx.Err()
	}
}

// sendNext is called when key's call in flight has returned: it starts
// the call of the callers queued meanwhile, and the next ones while
// callers keep queuing, or retires the key. inline says whether the
// caller is already a goroutine of its own (a batch runner) that may keep
// going; a caller's own do hands the queue to a new goroutine and returns.
func (g *commitGroup[V]) sendNext(key string, inline bool) {
	for {
		g.mu.Lock()
		nb := g.slots[key]
		if nb == nil {
			delete(g.slots, key)
			g.mu.Unlock()
			return
		}
		g.slots[key] = nil // nb is in flight now; later callers queue anew
		g.mu.Unlock()
		if !inline {
			go func() {
				nb.run(key)
				g.sendNext(key, true)
			}()
			return
		}
		nb.run(key)
	}
}

// run makes one batch's call and hands its result to the batch's callers.
func (nb *commitBatch[V]) run(key string) {
	nb.v, nb.err = nb.fn(nb.ctx, key)
	nb.cancel()
	close(nb.done)
}

// waiting returns the number of callers queued for the next call of key
// (tests use it to know that a caller has queued).
func (g *commitGroup[V]) waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if nb := g.slots[key]; nb != nil {
		return nb.waiters
	}
	return 0
}
