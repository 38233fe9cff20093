package seqgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// batcher joins the concurrent Next calls of one (biz, day) in this
// process (group commit): the first caller to find no script call in
// flight starts a sender; callers that arrive while its call is in flight
// queue, and when it returns, every caller queued then (up to
// Options.MaxBatch) goes into the next call. Nothing waits on a timer.
type batcher struct {
	key string // the counter key: its entry in Generator.batchers

	mu      sync.Mutex
	queue   []*waiter // guarded by mu: callers waiting for a call, oldest first
	running bool      // guarded by mu: a sender is serving queue
	dead    bool      // guarded by mu: out of Generator.batchers; joiners look again
}

// waiter is one Next call waiting in a batcher.
type waiter struct {
	biz string
	day Day
	res chan taken // buffered: the one result, sent under batcher.mu

	round  *round // guarded by batcher.mu: the call it is in, nil while queued
	served bool   // guarded by batcher.mu: its result is in res
	gone   bool   // guarded by batcher.mu: its caller left; a number taken for it is skipped
}

// taken is a waiter's result.
type taken struct {
	v   int64
	err error
}

// round is one script call of a batcher and the work around it (a wait
// for a segment, a reservation, the fallback to the DB). Its context is
// no caller's: it ends when every waiter of the round has left, or when
// the Generator closes, so one caller giving up costs the others nothing.
type round struct {
	ctx    context.Context
	cancel context.CancelFunc
	live   int // guarded by batcher.mu: waiters of the round still waiting
}

// nextJoined issues the next number of biz on day through the batcher of
// k, honouring ctx: a caller that leaves before its number is handed out
// gets ctx's error, and the number, if one was taken for it, is skipped.
func (g *Generator) nextJoined(ctx context.Context, biz string, day Day, k keyset) (int64, error) {
	w := &waiter{biz: biz, day: day, res: make(chan taken, 1)}
	b := g.join(k, w)
	select {
	case r := <-w.res:
		return r.v, r.err
	case <-ctx.Done():
	}
	b.mu.Lock()
	if w.served {
		b.mu.Unlock()
		r := <-w.res
		return r.v, r.err
	}
	w.gone = true
	if r := w.round; r != nil {
		if r.live--; r.live == 0 {
			r.cancel()
		}
	}
	b.mu.Unlock()
	return 0, ctx.Err()
}

// join queues w in the batcher of k, starting its sender if none runs.
func (g *Generator) join(k keyset, w *waiter) *batcher {
	for {
		v, ok := g.batchers.Load(k.counter)
		if !ok {
			v, _ = g.batchers.LoadOrStore(k.counter, &batcher{key: k.counter})
		}
		b := v.(*batcher)
		b.mu.Lock()
		if b.dead {
			b.mu.Unlock()
			continue
		}
		b.queue = append(b.queue, w)
		start := !b.running
		b.running = true
		b.mu.Unlock()
		if start {
			g.startSender(b, k)
		}
		return b
	}
}

// startSender runs send on a goroutine of its own, which Close waits for;
// after Close it fails the queue with ErrClosed instead.
func (g *Generator) startSender(b *batcher, k keyset) {
	g.mu.Lock()
	closed := g.closed.Load()
	if !closed {
		g.wg.Add(1) // under mu, so that Close's Wait cannot miss it
	}
	g.mu.Unlock()
	if closed {
		b.mu.Lock()
		for _, w := range b.queue {
			b.give(w, taken{err: ErrClosed}, &g.ctr)
		}
		b.queue, b.running = nil, false
		b.mu.Unlock()
		return
	}
	go func() {
		defer g.wg.Done()
		// No recover: no user callback runs here unguarded (SeedFrom's
		// panics are errors already), and a panic of ours must not leave
		// callers waiting forever on a process that goes on.
		for {
			batch, r := g.nextBatch(b)
			if batch == nil {
				return
			}
			g.serve(b, k, batch, r)
			r.cancel()
			// Let the callers just served run before the next batch forms:
			// most call again at once, and would otherwise find a batch of
			// the few that queued meanwhile in flight, and wait a round trip
			// for the next. A yield, not a wait: nothing sleeps.
			runtime.Gosched()
		}
	}()
}

// nextBatch takes the waiters of the next call off b's queue, up to
// MaxBatch, oldest first, dropping those that left. With none left it
// retires b (running off, out of Generator.batchers) and returns nil.
func (g *Generator) nextBatch(b *batcher) ([]*waiter, *round) {
	b.mu.Lock()
	defer b.mu.Unlock()
	live := b.queue[:0]
	for _, w := range b.queue {
		if !w.gone {
			live = append(live, w)
		}
	}
	clear(b.queue[len(live):])
	b.queue = live
	if len(live) == 0 {
		b.queue, b.running, b.dead = nil, false, true
		g.batchers.CompareAndDelete(b.key, b)
		return nil, nil
	}
	n := min(len(live), g.opts.MaxBatch)
	batch := make([]*waiter, n)
	copy(batch, live)
	b.queue = append(b.queue[:0], live[n:]...)
	r := &round{live: n}
	r.ctx, r.cancel = context.WithCancel(g.ctx)
	for _, w := range batch {
		w.round = r
	}
	return batch, r
}

// serve issues the numbers of one batch: one script call for up to
// len(batch) numbers, handed out in queue order. Waiters the call had no
// number for (the segment or the day had fewer left) go back to the front
// of the queue. When Redis is down, each waiter still there gets its number
// from this process's spare segment; any other error goes to every waiter.
func (g *Generator) serve(b *batcher, k keyset, batch []*waiter, r *round) {
	g.ctr.batches.Add(1)
	w0 := batch[0]
	first, count, err := g.takeRedis(r.ctx, w0.biz, w0.day, k, int64(len(batch)), true)
	var down redisDown
	switch {
	case err == nil:
		b.handOut(batch, first, count, &g.ctr)
	case errors.As(err, &down):
		for _, w := range batch {
			if b.left(w) {
				continue
			}
			v, err := g.takeDown(r.ctx, w.biz, w.day, 1, err)
			b.mu.Lock()
			b.give(w, taken{v, g.roundErr(err)}, &g.ctr)
			b.mu.Unlock()
		}
	default:
		err = g.roundErr(err)
		b.mu.Lock()
		for _, w := range batch {
			b.give(w, taken{err: err}, &g.ctr)
		}
		b.mu.Unlock()
	}
}

// roundErr is what a waiter gets for a round's error: ErrClosed when the
// round ended because the Generator closed (its context is no caller's).
func (g *Generator) roundErr(err error) error {
	if err != nil && g.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return err
}

// handOut gives first, first+1, ... (count numbers) to the batch's
// waiters in order, and queues the rest again, in front.
func (b *batcher) handOut(batch []*waiter, first, count int64, c *counters) {
	n := min(int(count), len(batch))
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, w := range batch[:n] {
		b.give(w, taken{v: first + int64(i)}, c)
	}
	if rest := batch[n:]; len(rest) > 0 {
		for _, w := range rest {
			w.round = nil
		}
		b.queue = append(rest[:len(rest):len(rest)], b.queue...)
	}
}

// give hands t to w, or, if w's caller left, drops it: a number taken for
// a caller who left is skipped, never handed to another. b.mu must be held.
func (b *batcher) give(w *waiter, t taken, c *counters) {
	if w.gone {
		if t.err == nil {
			c.abandoned.Add(1)
		}
		return
	}
	w.served = true
	w.res <- t
}

// left reports whether w's caller left.
func (b *batcher) left(w *waiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return w.gone
}
