package repo

import (
	"context"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// TestGenerations_bumpAppliedTwice: go-redis sends a command again when
// its reply was lost, though the first one ran (a stalled link: the reply
// is held past the read timeout, the retry goes out on a new connection).
// A bump applied a second time, after another writer's bump, must not
// bring back the generation of its first application: pages filled under
// it before the other writer's commit would be current again (a chaos run
// found such lists stale for 0.4 s). Fails with testswitch.GenCounterOff.
func TestGenerations_bumpAppliedTwice(t *testing.T) {
	ctx := context.Background()
	g, rn := testGenerations(t)
	keys := g.keys
	const where = `("3")`
	key, err := keys.Key(where)
	if err != nil {
		t.Fatal(err)
	}
	gen := func() string {
		t.Helper()
		gen, err := g.read(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		return gen.exact()
	}
	apply := func() { // the same bump, token and all, as a retry sends it
		t.Helper()
		if _, err := rn.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
			bump(ctx, p, key, "retried")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	start := gen()
	apply()
	first := gen() // readers fill pages under it
	if first == start {
		t.Fatalf("the bump left the generation at %q", start)
	}
	if err := g.Invalidate(ctx, where); err != nil { // another writer's commit, then its bump
		t.Fatal(err)
	}
	other := gen()
	if other == first {
		t.Fatalf("the other writer's bump left the generation at %q", first)
	}
	apply() // the first bump again, late
	if again := gen(); again == first || again == other {
		t.Errorf("the bump applied again set generation %q (first %q, the other writer's %q): want a new one", again, first, other)
	}
}

// TestPatch_comparesGeneration: two writes move row 5; the first one's
// upkeep comes after the second's (its process was cut from Redis, or
// slow). A patch applied in that order would leave the list as the first
// write left it: row 5 out of list 7, though the second write, the later
// one, put it in. The first write's patch must find the generation changed
// since its read before its COMMIT, and bump it instead. Fails with
// testswitch.PatchCompareOff.
func TestPatch_comparesGeneration(t *testing.T) {
	ctx := context.Background()
	g, _ := testGenerations(t)
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
		first := g.seen(ctx, []string{where})[where] // write 1 reads, then commits: 5 leaves 7
		second := g.seen(ctx, []string{where})[where]
		// write 2 commits after write 1 (5 joins 7 at key 03), and its upkeep runs first
		if err := (&patcher{g: g, seen: second, line: patchLine("5", "03")}).Invalidate(ctx, where); err != nil {
			t.Fatal(err)
		}
		if err := (&patcher{g: g, seen: first, line: patchLine("5", "")}).Invalidate(ctx, where); err != nil {
			t.Fatal(err)
		}
		gen, err := g.read(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		page, _, ok := patchWindow(window, "", 10, gen.patches)
		if !ok {
			t.Fatalf("the window did not patch: %q", gen.patches)
		}
		return gen, page
	}
	gen, _ := run(false)
	if gen.base == start.base {
		t.Errorf("the late patch kept base %q (patches %q): want a bump, so that the window reloads", gen.base, gen.patches)
	}
	if got := g.patches.Load(); got != 1 {
		t.Errorf("%d patches, want 1 (the second write's)", got)
	}

	// The same with the compare off: the late patch lands, and the list
	// misses row 5.
	start = gen
	gen, page := run(true)
	if gen.base != start.base {
		t.Fatalf("compare off: the generation was bumped (%q → %q): the switch does not reach the patch", start.base, gen.base)
	}
	if slices.ContainsFunc(page, func(r listRow[int64]) bool { return r.id == 5 }) {
		t.Fatalf("compare off: page %v holds row 5: the stale case did not happen", page)
	}
}

// testGenerations returns the generations of a query on a Redis of the
// test's own.
func testGenerations(t *testing.T) (*generations, *testcontainers.RedisNamespace) {
	t.Helper()
	rn := testcontainers.Redis(t)
	cache, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	keys, err := cacheaside.NewEntity[struct{}](cache, "items.gen.by_grp", cacheaside.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	return &generations{name: "items.query.by_grp", client: rn.Client, keys: keys}, rn
}
