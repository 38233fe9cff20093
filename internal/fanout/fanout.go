// Package fanout is the one shared pub/sub subscription behind asidekit's
// waiters: cacheaside's Mutex waiters (value-ready announcements) and
// guard/lock's waiting Obtain calls (release announcements). A Hub
// subscribes once per process to one channel and hands each message to the
// local waiters of the key it names, so that a thousand waiters cost one
// connection, not a thousand.
//
// # Losing the subscription
//
// Messages sent while the subscription is down are lost, and Redis does
// not say which. A Hub therefore reconnects by itself (with a jittered
// backoff), pings a connection that stays silent, and replaces one that
// does not answer the ping; and when the subscription is confirmed again
// after a loss it wakes every registered waiter, marking all its keys as
// seen with an empty payload, so that each re-checks what it waits for.
// It does not wake them at the loss itself: the server is then most
// likely unreachable, and a waiter sent to it would only meet the error.
// Until the subscription is back, waiters rely on their own timers (Live
// and LiveNow say whether they may sleep long).
//
// This is the behaviour guard/lock's notifier had; cacheaside's hub relied
// on go-redis's PubSub.Channel, which reconnects silently, so its waiters
// learned of nothing missed until their re-check timer fired.
package fanout

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is returned by Register and Listen after Close.
var ErrClosed = errors.New("fanout: closed")

// Options configure a Hub. A nil *Options means the defaults.
type Options struct {
	// Key returns the key of the waiters a message is for. Default: the
	// whole payload.
	Key func(payload string) string

	// WakeOne makes a message wake only the oldest waiter of its key that
	// has no wake-up pending (one lock release: only one waiter can win).
	// Default false: every waiter of the key.
	WakeOne bool

	// MinBackoff and MaxBackoff bound the jittered delay between two
	// attempts to subscribe again. Defaults 10ms and 1s.
	MinBackoff, MaxBackoff time.Duration

	// HealthInterval is how long the subscription may stay silent before
	// it pings the server; a second silent interval counts as a lost
	// connection. Default 15s.
	HealthInterval time.Duration
}

// Defaults of Options.
const (
	DefaultMinBackoff     = 10 * time.Millisecond
	DefaultMaxBackoff     = time.Second
	DefaultHealthInterval = 15 * time.Second
)

func (o *Options) init() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Key == nil {
		c.Key = func(p string) string { return p }
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.HealthInterval <= 0 {
		c.HealthInterval = DefaultHealthInterval
	}
	return c
}

// Hub is one shared subscription to a channel and its local waiters. It
// starts at the first Register (or Listen) and runs until Close. It is
// safe for concurrent use.
type Hub struct {
	client  redis.UniversalClient
	channel string
	opts    Options

	mu      sync.Mutex
	waiters map[string][]*Waiter // guarded by mu; per key, oldest first
	live    chan struct{}        // guarded by mu; closed while subscribed
	down    bool                 // guarded by mu; lost, not confirmed since
	ps      *redis.PubSub        // guarded by mu; nil until started
	closed  bool                 // guarded by mu
	stop    chan struct{}        // closed by Close
	ctx     context.Context      // the subscription's I/O; cancelled by Close
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns

	subscribes, messages atomic.Uint64
}

// New returns a Hub of channel on client. It does nothing until the first
// Register or Listen.
func New(client redis.UniversalClient, channel string, opts *Options) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{
		client:  client,
		channel: channel,
		opts:    opts.init(),
		waiters: make(map[string][]*Waiter),
		live:    make(chan struct{}),
		stop:    make(chan struct{}),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
}

// Register returns a waiter woken by the messages about any of keys,
// starting the subscription if it does not run yet. The caller must
// Unregister it. Use Live to wait until no message can be missed.
func (h *Hub) Register(keys ...string) (*Waiter, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	h.startLocked()
	w := newWaiter(keys)
	for _, k := range keys {
		h.waiters[k] = append(h.waiters[k], w)
	}
	return w, nil
}

// Unregister removes w. With passOn, in WakeOne mode, a wake-up that w
// received and did not use goes to the next waiter of its keys, so that a
// message is never lost locally by a waiter that left.
func (h *Hub) Unregister(w *Waiter, passOn bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range w.keys {
		ws := h.waiters[k]
		if i := slices.Index(ws, w); i >= 0 {
			ws = slices.Delete(ws, i, i+1)
		}
		if len(ws) == 0 {
			delete(h.waiters, k)
		} else {
			h.waiters[k] = ws
		}
	}
	if passOn && h.opts.WakeOne && w.pending() {
		for _, k := range w.keys {
			h.wakeLocked(k, "")
		}
	}
}

// Listen starts the subscription if it does not run yet and returns a
// channel closed once it is confirmed.
func (h *Hub) Listen() (<-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrClosed
	}
	h.startLocked()
	return h.live, nil
}

// Live returns a channel that is closed while the subscription is
// confirmed: wait on it after Register so as not to miss a message sent
// right after.
func (h *Hub) Live() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}

// LiveNow reports whether the subscription is confirmed at this moment.
func (h *Hub) LiveNow() bool {
	select {
	case <-h.Live():
		return true
	default:
		return false
	}
}

// Down reports whether the subscription was lost (or never confirmed
// after a failed attempt) and is not back yet: a waiter should then not
// wait for it.
func (h *Hub) Down() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// Closed returns a channel closed by Close.
func (h *Hub) Closed() <-chan struct{} { return h.stop }

// Stats returns how many times the subscription was confirmed (1 after it
// started, one more after each reconnection) and how many messages it
// received.
func (h *Hub) Stats() (subscriptions, messages uint64) {
	return h.subscribes.Load(), h.messages.Load()
}

// Close stops the subscription and waits for its goroutine. Waiters are
// not woken: they watch Closed. It is safe to call more than once.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	h.cancel() // ends a dial in progress
	ps := h.ps
	h.mu.Unlock()
	if ps != nil {
		// Closing the PubSub ends a Receive that blocks in run.
		_ = ps.Close()
		<-h.done
	}
}

func (h *Hub) startLocked() {
	if h.ps != nil {
		return
	}
	// Subscribe with no channel does no I/O; run subscribes.
	h.ps = h.client.Subscribe(h.ctx)
	go h.run(h.ps)
}

// wakeLocked hands a message for key to its waiters: every one, or in
// WakeOne mode the oldest with no wake-up pending.
func (h *Hub) wakeLocked(key, payload string) {
	for _, w := range h.waiters[key] {
		w.note(key, payload)
		if w.signal() && h.opts.WakeOne {
			return
		}
	}
}

// wakeAllLocked wakes every waiter after a gap in the subscription: each
// of its keys reads as seen, with no payload. Every key is noted before
// any waiter is signalled, so a waiter of several keys wakes to all of
// them seen, not to some.
func (h *Hub) wakeAllLocked() {
	for key, ws := range h.waiters {
		for _, w := range ws {
			w.note(key, "")
		}
	}
	for _, ws := range h.waiters {
		for _, w := range ws {
			w.signal()
		}
	}
}

// setLive records whether the subscription is confirmed.
func (h *Hub) setLive(up bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.live:
		if !up {
			h.live = make(chan struct{})
		}
	default:
		if up {
			close(h.live)
		}
	}
	if !up {
		h.down = true
	}
}
