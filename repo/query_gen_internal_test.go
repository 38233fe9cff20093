package repo

import (
	"context"
	"slices"
	"testing"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// TestPatch_comparesGeneration: two writes move row 5; the first one's
// upkeep comes after the second's (its process was cut from Redis, or
// slow). A patch applied in that order would leave the list as the first
// write left it: row 5 out of list 7, though the second write, the later
// one, put it in. The first write's patch must find the generation changed
// since its read before its COMMIT, and bump it instead. Fails with
// testswitch.PatchCompareOff.
func TestPatch_comparesGeneration(t *testing.T) {
	ctx := context.Background()
	g := testGenerations(t)
	const where = `("7")`
	start, err := g.read(ctx, where)
	if err != nil {
		t.Fatal(err)
	}
	window := queryEntry[int64]{IDs: []int64{1, 2}, K: []string{"01", "02"}} // cached under the base

	run := func(compareOff bool) (generation, []listRow[int64]) {
		t.Helper()
		testswitch.PatchCompareOff.Store(compareOff)
		defer testswitch.PatchCompareOff.Store(false)
		first := g.lg.Seen(ctx, where)[where] // write 1 reads, then commits: 5 leaves 7
		second := g.lg.Seen(ctx, where)[where]
		// write 2 commits after write 1 (5 joins 7 at key 03), and its upkeep runs first
		for _, p := range []cacheaside.Effect{
			cacheaside.Patch(g.lg, where, second, patchLine("5", "03")),
			cacheaside.Patch(g.lg, where, first, patchLine("5", "")),
		} {
			var w cacheaside.Effects
			w.Add(p)
			if err := w.Run(ctx); err != nil {
				t.Fatal(err)
			}
		}
		gen, err := g.read(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		page, _, ok := patchWindow(window, "", 10, gen.list.Patches)
		if !ok {
			t.Fatalf("the window did not patch: %q", gen.list.Patches)
		}
		return gen, page
	}
	gen, _ := run(false)
	if gen.list.Base == start.list.Base {
		t.Errorf("the late patch kept base %q (patches %q): want a bump, so that the window reloads", gen.list.Base, gen.list.Patches)
	}
	if got := g.lg.Stats().Patches; got != 1 {
		t.Errorf("%d patches, want 1 (the second write's)", got)
	}

	// The same with the compare off: the late patch lands, and the list
	// misses row 5.
	start = gen
	gen, page := run(true)
	if gen.list.Base != start.list.Base {
		t.Fatalf("compare off: the generation was bumped (%q → %q): the switch does not reach the patch", start.list.Base, gen.list.Base)
	}
	if slices.ContainsFunc(page, func(r listRow[int64]) bool { return r.id == 5 }) {
		t.Fatalf("compare off: page %v holds row 5: the stale case did not happen", page)
	}
}

// testGenerations returns the generations of a query on a Redis of the
// test's own.
func testGenerations(t *testing.T) *generations {
	t.Helper()
	rn := testcontainers.Redis(t)
	cache, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	lg, err := cacheaside.NewListGenerations(cache, "items.gen.by_grp")
	if err != nil {
		t.Fatal(err)
	}
	return &generations{lg: lg}
}
