package cacheaside

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// readGroup shares the Redis GETs of one entity's keys among concurrent
// Gets in this process (Policy.CoalesceReads) by group commit, not by
// singleflight. A caller never joins a GET already sent: that GET may have
// been read before the caller began, and return a value older than a write
// that completed before it. A caller that finds a GET of its key in flight
// queues for the next one instead, which is sent as soon as the one in
// flight returns and serves every caller queued for it. So each caller's
// bytes come from a GET sent after the caller began. A caller that finds
// no GET in flight sends its own at once, on its own context.
//
// The zero readGroup is ready to use.
type readGroup struct {
	mu    sync.Mutex
	slots map[string]*readSlot // guarded by mu: keys with a GET in flight
}

// readSlot is a key with a GET in flight.
type readSlot struct {
	next *readBatch // guarded by readGroup.mu: callers queued for the next GET, or nil
}

// readBatch is one GET shared by the callers queued for it.
type readBatch struct {
	done    chan struct{} // closed when b and err are set
	b       []byte        // read-only once done: callers decode their own copies
	err     error
	waiters int // guarded by readGroup.mu: callers still waiting
	ctx     context.Context
	cancel  context.CancelFunc // ends the GET when every caller has left
}

// get returns the entry bytes of key (redis.Nil when absent) from a GET
// sent after get was called. A queued caller whose ctx ends leaves with
// ctx.Err(); the GET goes on for the others, and is not sent (or is
// cancelled) when nobody waits for it any more.
func (g *readGroup) get(ctx context.Context, client redis.Cmdable, key string) ([]byte, error) {
	g.mu.Lock()
	s := g.slots[key]
	if s == nil {
		if g.slots == nil {
			g.slots = make(map[string]*readSlot)
		}
		s = &readSlot{}
		g.slots[key] = s
		g.mu.Unlock()
		b, err := client.Get(ctx, key).Bytes()
		g.sendNext(client, key, s, false)
		return b, err
	}
	nb := s.next
	if nb == nil {
		// The batch's GET runs on a context of its own: it keeps the values
		// of the caller that opened it (tracing) but not its cancellation.
		bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		nb = &readBatch{done: make(chan struct{}), ctx: bctx, cancel: cancel}
		s.next = nb
	}
	nb.waiters++
	g.mu.Unlock()

	select {
	case <-nb.done:
		return nb.b, nb.err
	case <-ctx.Done():
		g.mu.Lock()
		nb.waiters--
		if nb.waiters == 0 {
			if s.next == nb {
				s.next = nil // not sent yet: never send it
			}
			nb.cancel()
		}
		g.mu.Unlock()
		return nil, ctx.Err()
	}
}

// sendNext is called when key's GET in flight has returned: it sends the
// GET of the callers queued meanwhile, and the next ones while callers
// keep queuing, or retires the slot. inline says whether the caller is
// already a goroutine of its own (a batch sender) that may keep sending;
// a caller's own Get hands the queue to a new goroutine and returns.
func (g *readGroup) sendNext(client redis.Cmdable, key string, s *readSlot, inline bool) {
	for {
		g.mu.Lock()
		nb := s.next
		s.next = nil
		if nb == nil {
			delete(g.slots, key)
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
		if !inline {
			go func() {
				g.send(client, key, nb)
				g.sendNext(client, key, s, true)
			}()
			return
		}
		g.send(client, key, nb)
	}
}

// send runs one batch's GET and hands its result to the batch's callers.
func (g *readGroup) send(client redis.Cmdable, key string, nb *readBatch) {
	nb.b, nb.err = client.Get(nb.ctx, key).Bytes()
	nb.cancel()
	close(nb.done)
}

// waiting returns the number of callers queued for the next GET of key
// (tests use it to know that a caller has queued).
func (g *readGroup) waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.slots[key]; s != nil && s.next != nil {
		return s.next.waiters
	}
	return 0
}
