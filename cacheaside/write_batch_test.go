package cacheaside

import (
	"context"
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// An Invalidate of more ids than one write.lua call carries on a single
// node (invalidateBatch) drops every entry, gives every id a new version
// (a fill leased before it is refused) and keeps, per id, the higher of
// the old and the new write position. On a Cluster each id is its own
// call; the outcome is the same.
func TestInvalidate_batches(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		t.Run(name, func(t *testing.T) {
			rn := redis(t)
			c := newCache(t, rn.Client, rn.Namespace, nil)
			e := newEntity[user](t, c, "u", Policy{})
			ctx := context.Background()
			const n = 2*invalidateBatch + 7
			ids := make([]string, n)
			for i := range ids {
				ids[i] = fmt.Sprint(i)
			}
			// The first ids carry a higher position than the batch's (a
			// version to record it in first, as a load leaves: an id
			// without one is left without one).
			for _, id := range ids[:5] {
				loadedVersion(t, e, id)
			}
			if err := e.Invalidate(WithWriteLSN(ctx, 0x900), ids[:5]...); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				loadedVersion(t, e, id)
			}
			vers := make([]string, n)
			for i, id := range ids {
				key, _ := e.Key(id)
				if rn.Client.Exists(ctx, key).Val() != 1 {
					t.Fatalf("id %s not cached before the batch", id)
				}
				vers[i] = rn.Client.Get(ctx, key+":ver").Val()
			}
			if err := e.Invalidate(WithWriteLSN(ctx, 0x500), ids...); err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				key, _ := e.Key(id)
				if rn.Client.Exists(ctx, key).Val() != 0 {
					t.Fatalf("id %s still cached after the batch", id)
				}
				ver := rn.Client.Get(ctx, key+":ver").Val()
				if ver == vers[i] {
					t.Fatalf("id %s kept its version %q", id, ver)
				}
				want := uint64(0x500)
				if i < 5 {
					want = 0x900
				}
				if got := tokenLSN(ver); got != want {
					t.Fatalf("id %s records position %X after the batch, want %X", id, got, want)
				}
			}
		})
	}
}

// One invalidate pass over pending ids of different write positions and
// version TTLs (the retry queue holds such a mix): the ids of a call share
// its position and TTL arguments, so each id's version records its own
// position and lives its own TTL.
func TestInvalidate_mixedBatch(t *testing.T) {
	t.Parallel()
	rn := testcontainers.Redis(t)
	c := newCache(t, rn.Client, rn.Namespace, nil)
	e := newEntity[user](t, c, "u", Policy{})
	ctx := context.Background()
	type want struct {
		lsn   uint64 // the pending write's position
		verPX int64
	}
	plan := []want{{0x10, 600_000}, {0x10, 600_000}, {0x20, 600_000}, {0, 600_000}, {0, 900_000}, {0x10, 900_000}, {0x10, 600_000}}
	todo := make([]pending, len(plan))
	for i, w := range plan {
		key, _ := e.Key(fmt.Sprint(i))
		todo[i] = pending{key: key, verPX: w.verPX, ctr: e.ctr, lsn: w.lsn}
		loadedVersion(t, e, fmt.Sprint(i)) // position 1
	}
	if failed, err := invalidate(ctx, c, todo); err != nil || len(failed) != 0 {
		t.Fatalf("invalidate: %d failed, %v", len(failed), err)
	}
	for i, w := range plan {
		ver := rn.Client.Get(ctx, todo[i].key+":ver").Val()
		want := max(w.lsn, 1)
		if w.lsn == 0 { // a write of no position: it may be any
			want = UnknownLSN
		}
		if got := tokenLSN(ver); got != want {
			t.Errorf("id %d: version %q records position %X, want %X", i, ver, got, want)
		}
		ttl := rn.Client.PTTL(ctx, todo[i].key+":ver").Val().Milliseconds()
		if ttl > w.verPX || ttl < w.verPX-60_000 {
			t.Errorf("id %d: version TTL %d ms, want about %d", i, ttl, w.verPX)
		}
	}
}
