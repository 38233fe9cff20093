package cacheaside

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// Cached gives the value an entry holds and nothing else: no load, no
// store, no counted hit or miss; false for an absent, invalidated or
// "not found" entry, a bad id and a cancelled context.
func TestEntity_Cached(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "u", Policy{TTL: time.Hour, NullTTL: time.Hour})
	ctx := context.Background()
	if _, ok := e.Cached(ctx, "1"); ok {
		t.Fatal("Cached of an absent id: ok")
	}
	want := user{ID: "1", Name: "a", Ver: 3}
	if err := e.Set(ctx, "1", want); err != nil {
		t.Fatal(err)
	}
	before := e.Stats()
	if got, ok := e.Cached(ctx, "1"); !ok || got != want {
		t.Fatalf("Cached = %+v, %v; want %+v", got, ok, want)
	}
	if s := e.Stats(); s != before {
		t.Fatalf("Cached moved the counters: %+v, then %+v", before, s)
	}
	if err := e.Invalidate(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Cached(ctx, "1"); ok {
		t.Fatal("Cached of an invalidated id: ok")
	}
	l := &counter{absent: map[string]bool{"2": true}}
	if _, err := e.Get(ctx, "2", l.load); err == nil {
		t.Fatal("Get of an absent id: no error")
	}
	if _, ok := e.Cached(ctx, "2"); ok {
		t.Fatal(`Cached of a cached "not found": ok`)
	}
	for _, id := range []string{"", "a\x00b", strings.Repeat("x", 10_000)} {
		if _, ok := e.Cached(ctx, id); ok {
			t.Fatalf("Cached(%.20q): ok", id)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.Set(ctx, "3", want); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Cached(cancelled, "3"); ok {
		t.Fatal("Cached on a cancelled context: ok")
	}
	if l.calls.Load() != 1 {
		t.Fatalf("%d loads, want 1 (the Get's)", l.calls.Load())
	}
}

// With the near cache, Cached answers from it; a dead Redis is a false,
// not an error or a wait.
func TestEntity_Cached_nearAndDead(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	client := r.NewClient(t)
	h := &getHook{}
	client.AddHook(h)
	c := newCache(t, client, r.Namespace, nil)
	e := newEntity[user](t, c, "u", Policy{TTL: time.Hour, Local: &LocalPolicy{TTL: time.Hour}})
	ctx := context.Background()
	if err := c.WaitLocal(ctx); err != nil {
		t.Fatal(err)
	}
	want := user{ID: "1", Name: "near"}
	if err := e.Set(ctx, "1", want); err != nil {
		t.Fatal(err)
	}
	warm(t, e, "1", (&counter{}).load) // until the near cache serves it
	gets := h.gets.Load()
	if got, ok := e.Cached(ctx, "1"); !ok || got != want {
		t.Fatalf("Cached = %+v, %v; want %+v", got, ok, want)
	}
	if n := h.gets.Load() - gets; n != 0 {
		t.Fatalf("Cached of a near-cached id sent %d GETs, want 0", n)
	}

	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	d := newEntity[user](t, newCache(t, dead, "dead", nil), "u", Policy{})
	if _, ok := d.Cached(ctx, "1"); ok {
		t.Fatal("Cached on a dead Redis: ok")
	}
}
