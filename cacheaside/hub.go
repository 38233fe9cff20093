package cacheaside

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/asidekit/asidekit/internal/fanout"
)

// hub is a Cache's one shared subscription to the value-ready channel, an
// internal/fanout Hub started by the first waiter. Each message (an entry
// key, with the storing lease holder's token and the entry when it is
// small, see fill.lua) wakes every local waiter of that key; when the
// subscription comes back after a loss, every waiter is woken to re-check.
// Waiters also re-check on a timer, so a lost message only delays them.
type hub struct {
	c *Cache

	mu     sync.Mutex
	f      *fanout.Hub // guarded by mu; nil until the first waiter
	closed bool        // guarded by mu
}

// waiter is one caller waiting for one or more keys to be announced ready.
type waiter struct {
	fw   *fanout.Waiter  // nil on a closed Cache: never woken
	wake <-chan struct{} // a signal after an announcement of one of its keys
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

// announcedKey is the fanout key of a message: its entry key.
func announcedKey(msg string) string {
	key, _ := parseAnnouncement(msg)
	return key
}

// stored returns the entry that the holder of lease token announced for
// key, if it did.
func (w *waiter) stored(key, token string) ([]byte, bool) {
	if w.fw == nil || token == "" {
		return nil, false
	}
	msg, ok := w.fw.Payload(key)
	if !ok {
		return nil, false
	}
	_, a := parseAnnouncement(msg)
	if a.token != token || a.entry == "" {
		return nil, false
	}
	return []byte(a.entry), true
}

// allReady reports whether every one of keyList was announced (or the
// subscription lost) since the last reset.
func (w *waiter) allReady(keyList []string) bool {
	return w.fw != nil && w.fw.SeenAll(keyList)
}

// reset forgets the announcements so far (the caller is about to re-check).
func (w *waiter) reset() {
	if w.fw != nil {
		w.fw.Reset()
	}
}

// hubConfirm bounds how long a new waiter waits for the subscription to be
// confirmed, so that it does not miss an announcement sent right after.
const hubConfirm = time.Second

// register returns a waiter signalled whenever one of keyList is
// announced ready. The caller must unregister it. While the subscription
// is starting, register waits (up to hubConfirm, or ctx) for it to be
// confirmed; while it is down, it does not wait.
func (h *hub) register(ctx context.Context, keyList ...string) *waiter {
	f := h.fanout()
	if f == nil {
		return &waiter{}
	}
	fw, err := f.Register(keyList...)
	if err != nil { // closed meanwhile
		return &waiter{}
	}
	if !f.Down() {
		t := time.NewTimer(hubConfirm)
		select {
		case <-f.Live():
		case <-t.C:
		case <-ctx.Done():
		case <-f.Closed():
		}
		t.Stop()
	}
	return &waiter{fw: fw, wake: fw.C}
}

func (h *hub) unregister(w *waiter) {
	if w.fw == nil {
		return
	}
	h.mu.Lock()
	f := h.f
	h.mu.Unlock()
	f.Unregister(w.fw, false)
}

// fanout returns the Cache's Hub, creating it on first use, or nil once
// the Cache is closed.
func (h *hub) fanout() *fanout.Hub {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.f == nil && !h.closed {
		h.f = fanout.New(h.c.client, h.c.channel, &fanout.Options{Key: announcedKey})
	}
	return h.f
}

// close stops the subscription and waits for its goroutine.
func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	f := h.f
	h.mu.Unlock()
	if f != nil {
		f.Close()
	}
}
