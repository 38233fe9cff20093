package compat_test

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
)

// cacheaside's list generation script on miniredis (gopher-lua), in the
// order a cached query reaches it: a bump and a patch of a generation
// that Read started (no "#<n>" in it: the failed match gopher-lua once
// refused to pass to tonumber), then of one that has a count.
func TestListGenerations_miniredisScripts(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	c, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: "mini"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	g, err := cacheaside.NewListGenerations(c, "items.gen.by_grp")
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	read := func(id string) cacheaside.Generation {
		t.Helper()
		gs, err := g.Read(ctx, id)
		if err != nil {
			t.Fatalf("Read(%s): %v", id, err)
		}
		return gs[0]
	}
	for _, id := range []string{"bumped", "patched"} {
		if base := read(id).Base; strings.Contains(base, "#") {
			t.Fatalf("a started generation: %q", base)
		}
	}
	if err := g.Bump(ctx, "bumped"); err != nil {
		t.Fatalf("Bump of a started generation: %v", err)
	}
	if base := read("bumped").Base; !strings.HasSuffix(base, "#1") {
		t.Fatalf("bumped: %q, want #1", base)
	}
	seen := g.Seen(ctx, "patched")["patched"]
	if ok, err := g.Patch(ctx, "patched", seen, "-1"); err != nil || !ok {
		t.Fatalf("Patch(current) = %v, %v; want patched", ok, err)
	}
	if ok, err := g.Patch(ctx, "patched", seen, "-2"); err != nil || ok {
		t.Fatalf("Patch(stale) of a started generation = %v, %v; want a bump", ok, err)
	}
	if err := g.Bump(ctx, "patched"); err != nil {
		t.Fatalf("Bump of a counted generation: %v", err)
	}
	if got := read("patched"); !strings.HasSuffix(got.Base, "#2") || got.Patches != nil {
		t.Fatalf("patched: %+v, want #2 and no lines", got)
	}
}
