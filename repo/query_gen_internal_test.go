package repo

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
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
	g := &generations{name: "items.query.by_grp", client: rn.Client, keys: keys}
	const where = `("3")`
	key, err := keys.Key(where)
	if err != nil {
		t.Fatal(err)
	}
	gen := func() string {
		t.Helper()
		_, val, err := g.read(ctx, where)
		if err != nil {
			t.Fatal(err)
		}
		return val
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
