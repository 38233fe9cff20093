package cacheaside

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// A row from the log (StoreFromLog) is stored only over a version that
// records a position at or before its change's commit: never over an id
// without a version (none is created), a version a miss created, one a
// write of unknown position made, or one that records a newer write; and
// a stored row records its change's position, so an older change's row
// that lands later is refused too. Refused, the entry is deleted, as an
// invalidation deletes it. A DELETE's absence (AbsentFromLog) follows the
// same rule.
func TestStoreFromLog_rule(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		t.Run(name, func(t *testing.T) {
			rn := redis(t)
			c := newCache(t, rn.Client, rn.Namespace, nil)
			e := newEntity[user](t, c, "u", Policy{})
			ctx := context.Background()
			var loads int
			load := func(ctx context.Context, id string) (user, error) {
				loads++
				if rec := LSNRecorder(ctx); rec != nil {
					rec(0x100) // the position the load read after it
				}
				return user{ID: id, Name: "loaded"}, nil
			}
			apply := func(ef Effect) {
				t.Helper()
				var w Effects
				w.Add(ef)
				if err := c.Apply(ctx, &w); err != nil {
					t.Fatal(err)
				}
			}
			store := func(id string, commit uint64, name string) {
				t.Helper()
				apply(StoreFromLog(e, id, commit, user{ID: id, Name: name}))
			}
			read := func(id string) (string, int) {
				t.Helper()
				before := loads
				u, err := e.Get(ctx, id, load)
				if err != nil {
					t.Fatal(err)
				}
				return u.Name, loads - before
			}
			verKey := func(id string) string { k, _ := e.Key(id); return k + ":ver" }

			store("none", 0x200, "log")
			if n := rn.Client.Exists(ctx, verKey("none")).Val(); n != 0 {
				t.Fatalf("a row from the log created a version for an id that had none")
			}

			// A version a miss created (no position yet): refused.
			if _, err := e.Version(ctx, "bare"); err != nil {
				t.Fatal(err)
			}
			store("bare", 0x200, "log")
			if got, n := read("bare"); got != "loaded" || n != 1 {
				t.Fatalf("over a miss's version: read %q with %d loads, want the loader's", got, n)
			}

			// Loaded: the version records 0x100. A change at 0x200 stores;
			// the next read is a hit on it.
			if got, _ := read("a"); got != "loaded" {
				t.Fatalf("first read %q", got)
			}
			store("a", 0x200, "log200")
			if got, n := read("a"); got != "log200" || n != 0 {
				t.Fatalf("after a change at 200 over a version at 100: read %q with %d loads, want log200 from the cache", got, n)
			}
			// An older change's row landing later: refused (the version
			// records 0x200 now), the entry deleted.
			store("a", 0x180, "log180")
			if got, n := read("a"); got != "loaded" || n != 1 {
				t.Fatalf("a change at 180 after one at 200: read %q with %d loads, want a reload", got, n)
			}

			// A DELETE's absence (AbsentFromLog), under the same rule:
			// stored over the version at 0x100, the read finds "not found"
			// with no load; an older one after it is refused.
			if got, _ := read("c"); got != "loaded" {
				t.Fatalf("first read %q", got)
			}
			apply(AbsentFromLog(e, "c", 0x200))
			before := loads
			if _, err := e.Get(ctx, "c", load); !errors.Is(err, ErrNotFound) || loads != before {
				t.Fatalf("after a DELETE at 200 over a version at 100: %v with %d loads, want ErrNotFound from the cache", err, loads-before)
			}
			apply(AbsentFromLog(e, "c", 0x150))
			if got, n := read("c"); got != "loaded" || n != 1 {
				t.Fatalf("a DELETE at 150 after one at 200: read %q with %d loads, want a reload", got, n)
			}

			// A write at 0x300 that completed: a change at 0x250 is older.
			if got, _ := read("b"); got != "loaded" {
				t.Fatalf("first read %q", got)
			}
			if err := e.Invalidate(WithWriteLSN(ctx, 0x300), "b"); err != nil {
				t.Fatal(err)
			}
			if got, _ := read("b"); got != "loaded" {
				t.Fatalf("read %q", got)
			}
			store("b", 0x250, "log250")
			if got, n := read("b"); got != "loaded" || n != 1 {
				t.Fatalf("a change at 250 after a write at 300: read %q with %d loads, want a reload", got, n)
			}
			store("b", 0x350, "log350")
			if got, n := read("b"); got != "log350" || n != 0 {
				t.Fatalf("a change at 350 after a write at 300: read %q with %d loads, want log350 from the cache", got, n)
			}

			// A write of unknown position: refused until a load gives the
			// version a position again.
			if err := e.Invalidate(WithWriteLSN(ctx, UnknownLSN), "b"); err != nil {
				t.Fatal(err)
			}
			store("b", 0x400, "log400")
			if got, n := read("b"); got != "loaded" || n != 1 {
				t.Fatalf("after a write of unknown position: read %q with %d loads, want a reload", got, n)
			}
		})
	}
}
