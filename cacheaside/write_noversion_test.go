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
// (RequiredLSN is UnknownLSN: the primary). An id with a version that
// records a position gets a new one that records the write's, as before.
func TestInvalidate_noVersionCreatesNone(t *testing.T) {
	t.Parallel()
	rn := testcontainers.Redis(t)
	c := newCache(t, rn.Client, rn.Namespace, nil)
	e := newEntity[user](t, c, "u", Policy{})
	ctx := context.Background()
	var required uint64
	load := func(ctx context.Context, id string) (user, error) {
		required = RequiredLSN(ctx)
		if rec := LSNRecorder(ctx); rec != nil {
			rec(0x18) // the position the load saw
		}
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

	// Now the id has a version (its miss started one, its fill recorded
	// the position its load saw): the next write records its position
	// there, and the next miss requires it.
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

// A late invalidation (the log's Invalidator applying a change older than
// a write that completed) of an id whose version a miss has just created
// (Redis lost the one the write made: a restart, a failover) must not
// give the next miss its own lower position: a replica that has replayed
// that position but not the completed write would then load the old row,
// and the fill would store it. The source of truth here: the completed
// write at 0x30 made the row "new"; a replica has replayed up to 0x25,
// where it is "old"; the late invalidation records 0x20. With the rule
// off (write.lua taking a miss's version for "no position" rather than
// "unknown") the second read loads "old" from the replica and caches it.
func TestInvalidate_lateOverLostVersion(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		for _, s := range []Strategy{None, Mutex} {
			t.Run(name+"/"+s.String(), func(t *testing.T) {
				rn := redis(t)
				c := newCache(t, rn.Client, rn.Namespace, nil)
				e := newEntity[user](t, c, "u", Policy{Strategy: s})
				ctx := context.Background()
				const written, replayed, late = 0x30, 0x25, 0x20
				var lateDone bool
				load := func(ctx context.Context, id string) (user, error) {
					need := RequiredLSN(ctx)
					if need != UnknownLSN && need <= replayed {
						return user{ID: id, Name: "old"}, nil // the replica
					}
					if !lateDone { // the late invalidation lands during the first load
						lateDone = true
						if err := e.Invalidate(WithWriteLSN(context.Background(), late), id); err != nil {
							return user{}, err
						}
					}
					if rec := LSNRecorder(ctx); rec != nil {
						rec(written + 1) // the primary's position after the load
					}
					return user{ID: id, Name: "new"}, nil
				}
				for i := 1; i <= 3; i++ {
					got, err := e.Get(ctx, "x", load)
					if err != nil {
						t.Fatal(err)
					}
					if got.Name != "new" {
						t.Fatalf("read %d = %q, want \"new\": a row older than the write at %X that completed before it", i, got.Name, written)
					}
				}
				if !lateDone {
					t.Fatal("the late invalidation never ran")
				}
			})
		}
	}
}

// loadedVersion gives id the version a load that told the position it saw
// leaves (LSNRecorder, position 1, as repo's loads of an id of unknown
// position do; a version that records one keeps it), and caches it. A
// version a miss created and no load gave a position counts as unknown,
// and so do the writes over it (write.lua).
func loadedVersion(t testing.TB, e *Entity[user], id string) {
	t.Helper()
	load := func(ctx context.Context, id string) (user, error) {
		if rec := LSNRecorder(ctx); rec != nil {
			rec(1)
		}
		return user{ID: id}, nil
	}
	if _, err := e.Get(context.Background(), id, load); err != nil {
		t.Fatal(err)
	}
	key, _ := e.Key(id)
	if ver := e.c.client.Get(context.Background(), key+":ver").Val(); tokenLSN(ver) == UnknownLSN {
		t.Fatalf("id %s: version %q records no position after a load that saw one", id, ver)
	}
}
