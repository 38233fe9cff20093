package compat_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
)

// cacheaside's scripts on miniredis, whose Lua is gopher-lua: each runs
// on the states Redis' Lua accepts, in the order an application reaches
// them. The write after a load is the case gopher-lua once rejected:
// write.lua read the write count of a version that version.lua or
// lease.lua had created (no "#<n>" in it) with tonumber(string.match(…)),
// and a failed match is no value at all there, an error for tonumber.
func TestEntity_miniredisScripts(t *testing.T) {
	t.Parallel()
	for _, s := range []cacheaside.Strategy{cacheaside.None, cacheaside.SingleFlight, cacheaside.Mutex} {
		t.Run(s.String(), func(t *testing.T) {
			t.Parallel()
			mr := miniredis.RunT(t)
			rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
			t.Cleanup(func() { _ = rdb.Close() })
			c, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: "mini"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			e, err := cacheaside.NewEntity[string](c, "item", cacheaside.Policy{Strategy: s})
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			var loads atomic.Int64
			load := func(context.Context, string) (string, error) { loads.Add(1); return "loaded", nil }
			get := func(want string, wantLoads int64) {
				t.Helper()
				if v, err := e.Get(ctx, "1", load); err != nil || v != want {
					t.Fatalf("Get = %q, %v; want %q", v, err, want)
				}
				if n := loads.Load(); n != wantLoads {
					t.Fatalf("%d loads, want %d", n, wantLoads)
				}
			}

			get("loaded", 1) // version.lua or lease.lua, then fill.lua
			get("loaded", 1) // a hit
			p, err := e.Peek(ctx, "1")
			if err != nil {
				t.Fatalf("Peek: %v", err)
			}
			if p.State != cacheaside.PeekValue {
				t.Fatalf("Peek after a fill: %v, want a value", p.State)
			}
			// write.lua on the version the load created (no write count).
			if err := e.Invalidate(ctx, "1"); err != nil {
				t.Fatalf("Invalidate after a load: %v", err)
			}
			get("loaded", 2)
			// write.lua storing, on a version that now has a count.
			if err := e.Set(ctx, "1", "set"); err != nil {
				t.Fatalf("Set: %v", err)
			}
			get("set", 2)
			ver, err := e.Version(ctx, "1")
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := e.SetIfVersion(ctx, "1", ver, "cas"); err != nil || !ok {
				t.Fatalf("SetIfVersion(current) = %v, %v; want stored", ok, err)
			}
			if ok, err := e.SetIfVersion(ctx, "1", ver, "stale"); err != nil || ok {
				t.Fatalf("SetIfVersion(stale) = %v, %v; want refused", ok, err)
			}
			if err := e.Invalidate(ctx, "1", "2", "3"); err != nil {
				t.Fatalf("Invalidate of three ids (one call): %v", err)
			}
			// A failed load: release.lua under Mutex.
			boom := errors.New("boom")
			if _, err := e.Get(ctx, "1", func(context.Context, string) (string, error) { return "", boom }); !errors.Is(err, boom) {
				t.Fatalf("Get with a failing loader = %v, want boom", err)
			}
			get("loaded", 3)
			if st := e.Stats(); st.InvalidationsDeferred != 0 || st.CacheErrors != 0 {
				t.Fatalf("stats %+v: deferred invalidations or cache errors", st)
			}
		})
	}
}
