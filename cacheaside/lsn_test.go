package cacheaside

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// An invalidation made with WithWriteLSN records its position in the id's
// version; a later miss's loader sees it (Get under every strategy, and
// GetMany), an invalidation with a lower position keeps the higher one,
// one with none makes it unknown, a Set records it too, and an id never
// written (its version created by a miss: Redis may have lost the one a
// write made) requires UnknownLSN until a load tells the position it saw
// (LSNRecorder), writes made meanwhile included.
func TestWriteLSN_reachesLoader(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		for _, s := range []Strategy{None, SingleFlight, Mutex} {
			t.Run(name+"/"+s.String(), func(t *testing.T) {
				rn := redis(t)
				c := newCache(t, rn.Client, rn.Namespace, nil)
				e := newEntity[user](t, c, "u", Policy{Strategy: s})
				testWriteLSN(t, e)
			})
		}
	}
}

func testWriteLSN(t *testing.T, e *Entity[user]) {
	ctx := context.Background()
	var seen, saw uint64
	load := func(ctx context.Context, id string) (user, error) {
		seen = RequiredLSN(ctx)
		if rec := LSNRecorder(ctx); rec != nil && saw != 0 {
			rec(saw)
		}
		return user{ID: id}, nil
	}
	get := func(id string) uint64 {
		t.Helper()
		seen = 1 << 63
		if _, err := e.Get(ctx, id, load); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	if got := get("a"); got != UnknownLSN {
		t.Fatalf("never written: loader requires %X, want UnknownLSN", got)
	}
	// A write over a version created by a miss, whatever position it
	// records, leaves it unknown: the version may stand for one Redis
	// lost, with a higher position (write.lua).
	for _, w := range []context.Context{ctx, WithWriteLSN(ctx, 0x10)} {
		if err := e.Invalidate(w, "a"); err != nil {
			t.Fatal(err)
		}
		if got := get("a"); got != UnknownLSN {
			t.Fatalf("written over a version a miss created: loader requires %X, want UnknownLSN", got)
		}
	}
	if err := e.Set(ctx, "z", user{ID: "z"}); err != nil { // a first version that records no position
		t.Fatal(err)
	}
	if err := e.Invalidate(WithWriteLSN(ctx, 0x20), "z"); err != nil {
		t.Fatal(err)
	}
	if got := get("z"); got != 0x20 {
		t.Fatalf("written at 20 over a version of no position: loader requires %X, want 20", got)
	}
	saw = 0x77
	if got := get("n"); got != UnknownLSN {
		t.Fatalf("never written: loader requires %X, want UnknownLSN", got)
	}
	saw = 0
	if err := e.Invalidate(WithWriteLSN(ctx, 0x10), "n"); err != nil { // a late write
		t.Fatal(err)
	}
	if got := get("n"); got != 0x77 {
		t.Fatalf("after a load that saw 77 the loader requires %X (the fill did not record it)", got)
	}
	if err := e.Invalidate(WithWriteLSN(ctx, UnknownLSN), "n"); err != nil {
		t.Fatal(err)
	}
	if got := get("n"); got != UnknownLSN {
		t.Fatalf("after a write of unknown position the loader requires %X", got)
	}
	saw = 0x10 // "a"'s next load tells a position: its fill records it
	if err := e.Invalidate(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got := get("a"); got != UnknownLSN {
		t.Fatalf("written over a version a miss created: loader requires %X, want UnknownLSN", got)
	}
	saw = 0
	if err := e.Invalidate(WithWriteLSN(ctx, 0x2A0000FF), "a"); err != nil {
		t.Fatal(err)
	}
	if got := get("a"); got != 0x2A0000FF {
		t.Fatalf("after a write at 2A0000FF the loader requires %X", got)
	}
	if err := e.Invalidate(WithWriteLSN(ctx, 0x100), "a"); err != nil {
		t.Fatal(err)
	}
	if got := get("a"); got != 0x2A0000FF {
		t.Fatalf("a later invalidation with a lower position lowered it to %X", got)
	}
	if err := e.Invalidate(ctx, "z"); err != nil { // a write of no position: it may be any
		t.Fatal(err)
	}
	if got := get("z"); got != UnknownLSN {
		t.Fatalf("after a write that records no position the loader requires %X, want UnknownLSN", got)
	}
	if err := e.Set(WithWriteLSN(ctx, 0x3000000000), "b", user{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Invalidate(WithWriteLSN(ctx, 0x10), "b"); err != nil {
		t.Fatal(err)
	}
	if got := get("b"); got != 0x3000000000 {
		t.Fatalf("after Set at 3000000000 the loader requires %X", got)
	}
	if err := e.Invalidate(WithWriteLSN(ctx, 0x10), "a", "b"); err != nil {
		t.Fatal(err)
	}
	var many uint64
	loadMany := func(ctx context.Context, ids []string) (map[string]user, error) {
		many = RequiredLSN(ctx)
		return map[string]user{}, nil
	}
	if _, err := e.GetMany(ctx, []string{"a", "b"}, loadMany); err != nil {
		t.Fatal(err)
	}
	if many != 0x3000000000 {
		t.Fatalf("GetMany's loader requires %X, want the highest of its ids'", many)
	}
	if _, err := e.GetMany(ctx, []string{"a", "c"}, loadMany); err != nil {
		t.Fatal(err)
	}
	if many != UnknownLSN {
		t.Fatalf("GetMany's loader requires %X with a never-written id, want UnknownLSN", many)
	}
}
