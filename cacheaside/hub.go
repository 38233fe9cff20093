package cacheaside

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub is a Cache's one shared subscription to the value-ready channel. It
// is started by the first waiter and dispatches each message (an entry key)
// to the local waiters of that key. Waiters also re-check on a timer, so a
// lost message or a dead subscription only delays them.
type hub struct {
	c *Cache

	mu       sync.Mutex
	ps       *redis.PubSub                         // guarded by mu; nil until started
	closed   bool                                  // guarded by mu
	failedAt time.Time                             // guarded by mu; last failed start
	waiters  map[string]map[chan struct{}]struct{} // guarded by mu
}

// hubRetry is how long the hub waits after a failed subscription before it
// tries again; hubConfirm bounds the wait for the confirmation.
const (
	hubRetry   = time.Second
	hubConfirm = time.Second
)

// register returns a channel that receives a signal when key is announced
// ready. The caller must unregister it.
func (h *hub) register(ctx context.Context, key string) chan struct{} {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters == nil {
		h.waiters = make(map[string]map[chan struct{}]struct{})
	}
	set := h.waiters[key]
	if set == nil {
		set = make(map[chan struct{}]struct{})
		h.waiters[key] = set
	}
	set[ch] = struct{}{}
	if h.ps == nil && !h.closed && time.Since(h.failedAt) > hubRetry {
		h.start(ctx)
	}
	return ch
}

func (h *hub) unregister(key string, ch chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.waiters[key]
	delete(set, ch)
	if len(set) == 0 {
		delete(h.waiters, key)
	}
}

// start subscribes and waits (briefly) for the confirmation, so that the
// first waiter does not miss a message sent right after. Called with mu
// held.
func (h *hub) start(ctx context.Context) {
	ps := h.c.client.Subscribe(h.c.base, h.c.channel)
	cctx, cancel := context.WithTimeout(ctx, hubConfirm)
	_, err := ps.Receive(cctx)
	cancel()
	if err != nil {
		_ = ps.Close()
		h.failedAt = time.Now()
		return
	}
	msgs := ps.Channel()
	if !h.c.goBackground(func() {
		for m := range msgs {
			h.dispatch(m.Payload)
		}
	}) {
		_ = ps.Close()
		return
	}
	h.ps = ps
}

func (h *hub) dispatch(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// close stops the subscription; the dispatch goroutine then ends.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	ps := h.ps
	h.ps = nil
	h.mu.Unlock()
	if ps != nil {
		_ = ps.Close()
	}
}
