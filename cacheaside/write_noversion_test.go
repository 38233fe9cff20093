package cacheaside

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// An invalidation of an id that has no version (nobody loaded it, or its
// version expired, or InvalidateAll dropped it) leaves it without one, as
// drop.lua does: no load of it is in flight, and the next miss starts a
// version that records no position, so its load must see every write
// (RequiredLSN is UnknownLSN: the primary). An id with a version gets a
// new one that records the write's position, as before.
func TestInvalidate_noVersionCreatesNone(t *testing.T) {
	t.Parallel()
	rn := testcontainers.Redis(t)
	c := newCache(t, rn.Client, rn.Namespace, nil)
	e := newEntity[user](t, c, "u", Policy{})
	ctx := context.Background()
	var required uint64
	load := func(ctx context.Context, id string) (user, error) {
		required = RequiredLSN(ctx)
		return user{ID: id}, nil
	}
	key, _ := e.Key("1")

	if err := e.Invalidate(WithWriteLSN(ctx, 0x10), "1"); err != nil {
		t.Fatal(err)
	}
	if n := rn.Client.Exists(ctx, key+":ver").Val(); n != 0 {
		t.Fatalf("an invalidation of an id without a version created one (%q)", rn.Client.Get(ctx, key+":ver").Val())
	}
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	if required != UnknownLSN {
		t.Fatalf("the miss after it required position %X, want UnknownLSN (the primary)", required)
	}

	// Now the id has a version (its miss started one): the next write
	// records its position there, and the next miss requires it.
	if err := e.Invalidate(WithWriteLSN(ctx, 0x20), "1"); err != nil {
		t.Fatal(err)
	}
	if got := tokenLSN(rn.Client.Get(ctx, key+":ver").Val()); got != 0x20 {
		t.Fatalf("version records position %X, want 20", got)
	}
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	if required != 0x20 {
		t.Fatalf("the miss required position %X, want 20", required)
	}
}
