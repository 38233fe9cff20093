package cacheaside

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub is a Cache's one shared subscription to the value-ready channel. It
// is started by the first waiter and dispatches each message (an entry
// key, with the storing lease holder's token and the entry when it is
// small, see fill.lua) to the local waiters of that key. Waiters also re-check on a timer, so a
// lost message or a dead subscription only delays them.
type hub struct {
	c *Cache

	mu       sync.Mutex
	ps       *redis.PubSub                   // guarded by mu; nil until started
	closed   bool                            // guarded by mu
	failedAt time.Time                       // guarded by mu; last failed start
	waiters  map[string]map[*waiter]struct{} // guarded by mu
}

// waiter is one caller waiting for one or more keys to be announced ready.
type waiter struct {
	keys []string
	wake chan struct{} // buffered: a signal after each announcement of one of keys

	mu    sync.Mutex
	ready map[string]announcement // guarded by mu: last announcement of each key since the last reset
}

// announcement is a value-ready message: the lease token of the holder
// that stored the entry, and the entry ("" when it was not sent: too
// large, not stored, or a released lease).
type announcement struct {
	token, entry string
}

// parseAnnouncement splits a message of fill.lua or release.lua.
func parseAnnouncement(msg string) (key string, a announcement) {
	key, rest, ok := strings.Cut(msg, "\n")
	if ok {
		a.token, a.entry, _ = strings.Cut(rest, "\n")
	}
	return key, a
}

func (w *waiter) notify(key string, a announcement) {
	w.mu.Lock()
	if w.ready == nil {
		w.ready = make(map[string]announcement, len(w.keys))
	}
	w.ready[key] = a
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// stored returns the entry that the holder of lease token announced for
// key, if it did.
func (w *waiter) stored(key, token string) ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.ready[key]
	if !ok || token == "" || a.token != token || a.entry == "" {
		return nil, false
	}
	return []byte(a.entry), true
}

// allReady reports whether every one of keyList was announced since the
// last reset.
func (w *waiter) allReady(keyList []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keyList {
		if _, ok := w.ready[k]; !ok {
			return false
		}
	}
	return true
}

// reset forgets the announcements so far (the caller is about to re-check).
func (w *waiter) reset() {
	w.mu.Lock()
	clear(w.ready)
	w.mu.Unlock()
}

// hubRetry is how long the hub waits after a failed subscription before it
// tries again; hubConfirm bounds the wait for the confirmation.
const (
	hubRetry   = time.Second
	hubConfirm = time.Second
)

// register returns a waiter signalled whenever one of keyList is
// announced ready. The caller must unregister it.
func (h *hub) register(ctx context.Context, keyList ...string) *waiter {
	w := &waiter{keys: keyList, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters == nil {
		h.waiters = make(map[string]map[*waiter]struct{})
	}
	for _, k := range keyList {
		set := h.waiters[k]
		if set == nil {
			set = make(map[*waiter]struct{})
			h.waiters[k] = set
		}
		set[w] = struct{}{}
	}
	if h.ps == nil && !h.closed && time.Since(h.failedAt) > hubRetry {
		h.start(ctx)
	}
	return w
}

func (h *hub) unregister(w *waiter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range w.keys {
		set := h.waiters[k]
		delete(set, w)
		if len(set) == 0 {
			delete(h.waiters, k)
		}
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

func (h *hub) dispatch(msg string) {
	key, a := parseAnnouncement(msg)
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.waiters[key] {
		w.notify(key, a)
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
