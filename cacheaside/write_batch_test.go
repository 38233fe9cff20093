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
			// The first ids carry a higher position than the batch's.
			if err := e.Invalidate(WithWriteLSN(ctx, 0x900), ids[:5]...); err != nil {
				t.Fatal(err)
			}
			var l counter
			for _, id := range ids {
				if _, err := e.Get(ctx, id, l.load); err != nil {
					t.Fatal(err)
				}
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
