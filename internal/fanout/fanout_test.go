package fanout_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/fanout"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// bound is how long a test waits for an event that must come: a loaded
// machine may be slow, but not by a minute.
const bound = time.Minute

// private starts a server of this test alone (CLIENT KILL TYPE pubsub
// would cut other tests' subscriptions on a shared one) and returns a
// client of it.
func private(t *testing.T) (*testcontainers.RedisServer, *redis.Client) {
	t.Helper()
	srv := testcontainers.NewRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = c.Close() })
	return srv, c
}

func newHub(t *testing.T, c redis.UniversalClient, opts *fanout.Options) *fanout.Hub {
	t.Helper()
	h := fanout.New(c, "ch", opts)
	t.Cleanup(h.Close)
	return h
}

func register(t *testing.T, h *fanout.Hub, keys ...string) *fanout.Waiter {
	t.Helper()
	w, err := h.Register(keys...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Unregister(w, false) })
	return w
}

func waitLive(t *testing.T, h *fanout.Hub) {
	t.Helper()
	select {
	case <-h.Live():
	case <-time.After(bound):
		t.Fatal("subscription not confirmed")
	}
}

func woken(w *fanout.Waiter) bool {
	select {
	case <-w.C:
		return true
	default:
		return false
	}
}

func mustWake(t *testing.T, what string, w *fanout.Waiter) {
	t.Helper()
	select {
	case <-w.C:
	case <-time.After(bound):
		t.Fatalf("%s not woken", what)
	}
}

// publish sends msg and waits until the hub received it (the publisher's
// reply says how many subscribers got it, not that they read it).
func publish(t *testing.T, c *redis.Client, h *fanout.Hub, msg string) {
	t.Helper()
	_, before := h.Stats()
	if n, err := c.Publish(context.Background(), "ch", msg).Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH reached %d subscribers: %v", n, err)
	}
	deadline := time.Now().Add(bound)
	for _, got := h.Stats(); got == before; _, got = h.Stats() {
		if time.Now().After(deadline) {
			t.Fatal("message not received")
		}
		time.Sleep(time.Millisecond)
	}
}

// A message wakes every waiter of its key, and only those; the payload is
// kept for each key until Reset.
func TestHub_messageWakesWaitersOfKey(t *testing.T) {
	_, c := private(t)
	h := newHub(t, c, &fanout.Options{Key: func(p string) string { k, _, _ := strings.Cut(p, "\n"); return k }})
	a1, a2 := register(t, h, "a"), register(t, h, "a")
	ab, b := register(t, h, "a", "b"), register(t, h, "b")
	waitLive(t, h)

	publish(t, c, h, "a\nfirst")
	for i, w := range []*fanout.Waiter{a1, a2, ab} {
		if !woken(w) {
			t.Errorf("waiter %d of a not woken", i)
		}
		if p, ok := w.Payload("a"); !ok || p != "a\nfirst" {
			t.Errorf("waiter %d: payload %q, %v", i, p, ok)
		}
	}
	if woken(b) || b.SeenAll([]string{"b"}) {
		t.Error("waiter of b woken by a message for a")
	}
	if ab.SeenAll([]string{"a", "b"}) {
		t.Error("SeenAll(a, b) after a message for a only")
	}
	publish(t, c, h, "b\n")
	if !woken(ab) || !woken(b) || !ab.SeenAll([]string{"a", "b"}) {
		t.Error("message for b did not reach its waiters")
	}
	ab.Reset()
	if _, ok := ab.Payload("a"); ok {
		t.Error("payload kept after Reset")
	}
	if s, m := h.Stats(); s != 1 || m != 2 {
		t.Errorf("Stats = %d subscriptions, %d messages; want 1, 2", s, m)
	}
}

// With WakeOne, a message wakes the oldest waiter with no wake-up pending;
// a waiter that leaves without using its wake-up passes it on.
func TestHub_wakeOne(t *testing.T) {
	_, c := private(t)
	h := newHub(t, c, &fanout.Options{WakeOne: true})
	w1, w2, w3 := register(t, h, "k"), register(t, h, "k"), register(t, h, "k")
	waitLive(t, h)

	publish(t, c, h, "k")
	publish(t, c, h, "k")
	if !woken(w1) || !woken(w2) || woken(w3) {
		t.Fatal("two messages did not wake the two oldest waiters, one each")
	}
	publish(t, c, h, "k") // to w1 again: its wake-up was taken
	h.Unregister(w1, true)
	if !woken(w2) || woken(w3) {
		t.Fatal("the wake-up of a waiter that left went elsewhere than the next oldest")
	}
}

// The shared reconnection behaviour: when the subscription's connection
// is killed, the Hub subscribes again by itself and, once confirmed, wakes
// every waiter of every key, in both modes, with every key seen and no
// payload: what was published during the gap was not heard.
func TestHub_reconnectWakesEveryWaiter(t *testing.T) {
	for name, opts := range map[string]*fanout.Options{"every": nil, "one": {WakeOne: true}} {
		t.Run(name, func(t *testing.T) {
			_, c := private(t)
			h := newHub(t, c, opts)
			ws := []*fanout.Waiter{register(t, h, "a"), register(t, h, "a"), register(t, h, "b", "c")}
			waitLive(t, h)
			for i, w := range ws {
				if woken(w) {
					t.Fatalf("waiter %d woken before the loss", i)
				}
			}
			if n, err := c.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Result(); err != nil || n != 1 {
				t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v; want the hub's connection", n, err)
			}
			for i, w := range ws {
				mustWake(t, "waiter "+string(rune('0'+i)), w)
			}
			if !ws[2].SeenAll([]string{"b", "c"}) {
				t.Error("keys not marked seen after the gap")
			}
			if p, ok := ws[0].Payload("a"); !ok || p != "" {
				t.Errorf("payload after the gap = %q, %v; want empty, seen", p, ok)
			}
			if s, _ := h.Stats(); s != 2 {
				t.Errorf("%d subscriptions, want 2", s)
			}
			if !h.LiveNow() || h.Down() {
				t.Error("not live after the reconnection")
			}
			// Still delivering after the reconnection.
			publish(t, c, h, "b")
			if !woken(ws[2]) {
				t.Error("no wake-up by a message after the reconnection")
			}
		})
	}
}

// A server that goes away and comes back: the Hub is down in between
// (waiters are not woken toward a dead server), then back, and wakes them.
func TestHub_serverRestart(t *testing.T) {
	srv, c := private(t)
	h := newHub(t, c, &fanout.Options{MaxBackoff: 50 * time.Millisecond})
	w := register(t, h, "k")
	waitLive(t, h)
	srv.Stop()
	deadline := time.Now().Add(bound)
	for !h.Down() {
		if time.Now().After(deadline) {
			t.Fatal("Hub not down after its server stopped")
		}
		time.Sleep(time.Millisecond)
	}
	if h.LiveNow() || woken(w) {
		t.Fatal("live, or waiter woken, while the server is down")
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	mustWake(t, "waiter", w)
	if h.Down() || !h.LiveNow() {
		t.Error("not live after the server came back")
	}
}

func TestHub_close(t *testing.T) {
	_, c := private(t)
	h := fanout.New(c, "ch", nil)
	h.Close() // before it started
	if _, err := h.Register("k"); err != fanout.ErrClosed {
		t.Fatalf("Register after Close = %v", err)
	}
	h = fanout.New(c, "ch", nil)
	register(t, h, "k")
	live, err := h.Listen()
	if err != nil {
		t.Fatal(err)
	}
	<-live
	h.Close()
	h.Close()
	select {
	case <-h.Closed():
	default:
		t.Fatal("Closed not closed")
	}
	if _, err := h.Listen(); err != fanout.ErrClosed {
		t.Fatalf("Listen after Close = %v", err)
	}
	// The server learns of the closed connection a moment later.
	deadline := time.Now().Add(bound)
	for c.PubSubNumSub(context.Background(), "ch").Val()["ch"] != 0 {
		if time.Now().After(deadline) {
			t.Fatal("still subscribed after Close")
		}
		time.Sleep(time.Millisecond)
	}
}
