package cacheaside

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
)

// The Invalidates of several entities of one Cache (a row and the
// mappings of its unique keys) are one pipeline: one round trip after the
// commit, not one per entity; each entity's entries are gone and its
// loads that began before are refused, as with Entity.Invalidate.
func TestEffects_invalidationsShareAPipeline(t *testing.T) {
	t.Parallel()
	c, client, rt := countedCache(t, testcontainers.Redis(t))
	users := newEntity[user](t, c, "user", Policy{TTL: time.Hour})
	byEmail := newEntity[user](t, c, "user.by.email", Policy{TTL: time.Hour})
	ctx := context.Background()
	load := func(_ context.Context, id string) (user, error) { return user{ID: id, Ver: 1}, nil }
	for _, e := range []*Entity[user]{users, byEmail} {
		for _, id := range []string{"1", "2"} {
			if _, err := e.Get(ctx, id, load); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := users.Invalidate(ctx, "0"); err != nil { // the server has write.lua: no NOSCRIPT below
		t.Fatal(err)
	}
	var w Effects
	w.Add(Invalidate(users, "1", "2"), Invalidate(byEmail, "1"), Invalidate(users, "2"))
	before := rt.n.Load()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load() - before; n != 1 {
		t.Errorf("the invalidations of two entities of one Cache took %d round trips, want 1", n)
	}
	for _, k := range []struct {
		e    *Entity[user]
		id   string
		want int64
	}{{users, "1", 0}, {users, "2", 0}, {byEmail, "1", 0}, {byEmail, "2", 1}} {
		key, _ := k.e.Key(k.id)
		if n, err := client.Exists(ctx, key).Result(); err != nil || n != k.want {
			t.Errorf("%s: exists %d, %v; want %d", key, n, err, k.want)
		}
	}
}

// With Redis unreachable, every entity's keys of a shared pipeline are
// queued for retry and each effect's error matches ErrInvalidationPending
// (held, not failed: the Cache's retrier has them); an invalid id fails
// its own effect alone, before any Redis work.
func TestEffects_sharedPipelineFails(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	proxy, dial := proxied(t, r)
	c := newCache(t, dial(), r.Namespace, &Options{BreakerThreshold: 1000})
	c.retry.mu.Lock()
	c.retry.running = true // the retrier's loop does not run: the queue is kept
	c.retry.mu.Unlock()
	users := newEntity[user](t, c, "user", Policy{TTL: time.Hour})
	byEmail := newEntity[user](t, c, "user.by.email", Policy{TTL: time.Hour})
	byName := newEntity[user](t, c, "user.by.name", Policy{TTL: time.Hour})
	var w Effects
	w.Add(Invalidate(users, "1", "2"), Invalidate(byEmail, "a@x"), Invalidate(byName, ""))
	proxy.Cut()
	failed, held, err := w.try(context.Background())
	if !errors.Is(err, ErrInvalidationPending) || !errors.Is(err, ErrInvalidID) {
		t.Fatalf("try = %v; want ErrInvalidationPending and ErrInvalidID", err)
	}
	if held != 3 || c.PendingInvalidations() != 3 {
		t.Errorf("held %d, pending %d; want the 3 valid ids", held, c.PendingInvalidations())
	}
	if failed == nil || failed.Len() != 1 || failed.list[0].ids[0] != "" {
		t.Errorf("failed = %+v; want the invalid id alone", failed)
	}
}

// A Bloom filter's effects, Distrust included, join the shared pipeline
// of the Invalidates of the same commit: one round trip for all.
func TestEffects_filterEffectsShareThePipeline(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c, client, rt := countedCache(t, r)
	users := newEntity[user](t, c, "user", Policy{TTL: time.Hour})
	f, err := bloom.New(client, "users", &bloom.Options{Namespace: r.Namespace, Capacity: 1000, FalsePositiveRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The server learns every script first: no NOSCRIPT below.
	if err := errors.Join(users.Invalidate(ctx, "0"), f.Add(ctx, "x"), f.Distrust(ctx)); err != nil {
		t.Fatal(err)
	}
	var w Effects
	w.Add(Invalidate(users, "1"), AddToFilter(f, "users", "y"), Distrust(f, "users"))
	before := rt.n.Load()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rt.n.Load() - before; n != 1 {
		t.Errorf("an Invalidate, an AddToFilter and a Distrust took %d round trips, want 1", n)
	}
	if ok, err := f.MightContain(ctx, "y"); err != nil || !ok {
		t.Errorf("MightContain(y) = %v, %v after the AddToFilter", ok, err)
	}
}
