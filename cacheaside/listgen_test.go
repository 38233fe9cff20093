package cacheaside

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// newListGenerations returns list generations "items.gen.by_grp" of c.
func newListGenerations(t *testing.T, c *Cache) *ListGenerations {
	t.Helper()
	g, err := NewListGenerations(c, "items.gen.by_grp")
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// readOne returns the generation of list id.
func readOne(t *testing.T, g *ListGenerations, id string) Generation {
	t.Helper()
	gs, err := g.Read(context.Background(), id)
	if err != nil || len(gs) != 1 {
		t.Fatalf("Read(%s) = %v, %v", id, gs, err)
	}
	return gs[0]
}

// A list's generation key is the key an entity of the same name gives
// the same id (repo's queries named them through such an entity before;
// the inspector and the asidekit command read them).
func TestListGenerations_keys(t *testing.T) {
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	g := newListGenerations(t, c)
	e := newEntity[struct{}](t, c, "items.gen.by_grp", Policy{})
	for _, id := range []string{"*", `("3")`, `("a b:{c}","\u00001")`} {
		got, err := g.Key(id)
		want, werr := e.Key(id)
		if err != nil || werr != nil || got != want {
			t.Errorf("Key(%q) = %q, %v; the entity's %q, %v", id, got, err, want, werr)
		}
	}
	if got, _ := g.Key("*"); got != r.Namespace+":{items.gen.by_grp:%2A}" {
		t.Errorf("Key(*) = %q", got)
	}
	if _, err := g.Key(strings.Repeat("x", 1025)); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Key of 1025 bytes: %v, want ErrInvalidID", err)
	}
	if _, err := g.Patch(context.Background(), "", "", "-1"); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Patch of an empty id: %v, want ErrInvalidID", err)
	}
	if _, err := NewListGenerations(c, ""); !errors.Is(err, ErrInvalidID) {
		t.Errorf("NewListGenerations with no name: %v, want ErrInvalidID", err)
	}
	if _, err := NewListGenerations(nil, "x"); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewListGenerations on a nil Cache: %v, want ErrInvalid", err)
	}
}

// go-redis sends a command again when its reply was lost, though the
// first one ran (a stalled link: the reply is held past the read timeout,
// the retry goes out on a new connection). A bump applied a second time,
// after another writer's bump, must not bring back the generation of its
// first application: pages filled under it before the other writer's
// commit would be current again (a chaos run found such lists stale for
// 0.4 s). With testswitch.GenCounterOff it does.
func TestListGenerations_bumpAppliedTwice(t *testing.T) {
	for _, counter := range []bool{true, false} {
		r := testcontainers.Redis(t)
		g := newListGenerations(t, newCache(t, r.Client, r.Namespace, nil))
		testswitch.GenCounterOff.Store(!counter)
		first, other, again := bumpTwice(t, g)
		testswitch.GenCounterOff.Store(false)
		switch {
		case counter && (again == first || again == other):
			t.Errorf("the bump applied again set generation %q (first %q, the other writer's %q): want a new one", again, first, other)
		case !counter && again != first:
			t.Errorf("GenCounterOff: the bump applied again set %q, not its first %q: the switch does not reach the bump", again, first)
		}
	}
}

// bumpTwice applies one bump, another writer's, then the first one again,
// and returns the generation after each.
func bumpTwice(t *testing.T, g *ListGenerations) (first, other, again string) {
	t.Helper()
	ctx := context.Background()
	const id = `("3")`
	apply := func() { // the same bump, token and all, as a retry sends it
		t.Helper()
		if err := g.bump(ctx, []string{id}, func() string { return "retried" }); err != nil {
			t.Fatal(err)
		}
	}
	start := readOne(t, g, id).Exact()
	apply()
	first = readOne(t, g, id).Exact() // readers fill pages under it
	if first == start {
		t.Fatalf("the bump left the generation at %q", start)
	}
	if err := g.Bump(ctx, id); err != nil { // another writer's commit, then its bump
		t.Fatal(err)
	}
	if other = readOne(t, g, id).Exact(); other == first {
		t.Fatalf("the other writer's bump left the generation at %q", first)
	}
	apply() // the first bump again, late
	return first, other, readOne(t, g, id).Exact()
}

// Patch appends under the base while the generation is the value its
// writer saw and has room, and bumps otherwise (a changed value, a full
// generation, no generation), the count after "#" going up by one.
func TestListGenerations_patch(t *testing.T) {
	r := testcontainers.Redis(t)
	g := newListGenerations(t, newCache(t, r.Client, r.Namespace, nil))
	ctx := context.Background()
	const id = `("7")`
	patch := func(seen, line string) bool {
		t.Helper()
		ok, err := g.Patch(ctx, id, seen, line)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if patch("", "-1") || !strings.HasSuffix(readOne(t, g, id).Base, "#1") {
		t.Fatalf("a patch of no generation patched, or its bump is %q", readOne(t, g, id).Base)
	}
	start := readOne(t, g, id)
	for i := range maxListPatches {
		if !patch(g.Seen(ctx, id)[id], "+0a "+string(rune('a'+i))) {
			t.Fatalf("patch %d bumped", i+1)
		}
	}
	full := readOne(t, g, id)
	if full.Base != start.Base || len(full.Patches) != maxListPatches || full.Patches[0] != "+0a a" {
		t.Fatalf("after %d patches: %+v", maxListPatches, full)
	}
	if full.Exact() != full.Base+".32" || start.Exact() != start.Base {
		t.Errorf("Exact = %q, %q", full.Exact(), start.Exact())
	}
	if patch(g.Seen(ctx, id)[id], "-1") {
		t.Fatal("a full generation took one more line")
	}
	bumped := readOne(t, g, id)
	if !strings.HasSuffix(bumped.Base, "#2") || bumped.Patches != nil {
		t.Fatalf("the bump of a full generation: %+v", bumped)
	}
	if patch(start.Exact(), "-1") {
		t.Fatal("a patch of a changed generation patched")
	}
	if got := readOne(t, g, id).Base; !strings.HasSuffix(got, "#3") {
		t.Fatalf("the bump of a changed generation: %q", got)
	}
	if got := g.Seen(ctx, id, `("absent")`); len(got) != 2 || got[`("absent")`] != "" {
		t.Fatalf("Seen = %q", got)
	}
}

// events records an Observer's events.
type events struct {
	mu  sync.Mutex
	got map[string]int // "entity event"
}

func (o *events) OnEvent(entity string, ev Event, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.got == nil {
		o.got = map[string]int{}
	}
	o.got[entity+" "+ev.String()]++
}

func (o *events) count(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.got[key]
}

// The calls go through the Cache's breaker: a failure is returned and
// counted (the Observer sees it under the generations' name) and charges
// the breaker; while it is open nothing is sent, Bump and Patch fail,
// Read fails and Seen leaves every list out.
func TestListGenerations_breaker(t *testing.T) {
	r := testcontainers.Redis(t)
	client := r.NewClient(t)
	var down downHook
	var rt roundTrips
	client.AddHook(&down)
	client.AddHook(&rt)
	var obs events
	c := newCache(t, client, r.Namespace, &Options{BreakerThreshold: 1, BreakerCooldown: time.Hour, Observer: &obs})
	g := newListGenerations(t, c)
	ctx := context.Background()
	down.down.Store(true)
	if err := g.Bump(ctx, "1", "2"); err == nil {
		t.Fatal("Bump with Redis down succeeded")
	}
	if !c.br.Open() || obs.count("items.gen.by_grp cache_error") != 1 {
		t.Fatalf("breaker open %v, events %v; want open and one cache error", c.br.Open(), obs.got)
	}
	down.down.Store(false)
	rt.n.Store(0)
	if err := g.Bump(ctx, "1"); err == nil {
		t.Error("Bump with the breaker open succeeded")
	}
	if _, err := g.Patch(ctx, "1", "", "-1"); err == nil {
		t.Error("Patch with the breaker open succeeded")
	}
	if _, err := g.Read(ctx, "1"); err == nil {
		t.Error("Read with the breaker open succeeded")
	}
	if got := g.Seen(ctx, "1"); len(got) != 0 {
		t.Errorf("Seen with the breaker open = %q", got)
	}
	if n := rt.n.Load(); n != 0 {
		t.Errorf("%d round trips with the breaker open", n)
	}
	if n := obs.count("items.gen.by_grp bypass"); n != 4 {
		t.Errorf("%d bypasses counted, want 4", n)
	}
}

// While a recovery gate holds reads, Read sends nothing (the caller reads
// past the cache); writes go on.
func TestListGenerations_recoveryGate(t *testing.T) {
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	g := newListGenerations(t, c)
	ctx := context.Background()
	remove := c.AddRecoveryGate(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	defer remove()
	key, _ := g.Key("1")
	if _, err := g.Read(ctx, "1"); err == nil {
		t.Fatal("Read while recovering succeeded")
	}
	if n, err := r.Client.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("Read while recovering started the generation (%d, %v)", n, err)
	}
	if err := g.Bump(ctx, "1"); err != nil {
		t.Fatalf("Bump while recovering = %v", err)
	}
}

// With Options.ReplicaAcks a bump is confirmed as an invalidation is: on
// a server without replicas it is applied but fails, for its caller to
// send it again, and the breaker is not charged.
func TestListGenerations_replicaAcks(t *testing.T) {
	r := testcontainers.Redis(t)
	c := newCache(t, r.NewClient(t), r.Namespace, &Options{ReplicaAcks: 1, ReplicaAckTimeout: 10 * time.Millisecond, BreakerThreshold: 1})
	g := newListGenerations(t, c)
	ctx := context.Background()
	before := readOne(t, g, "1")
	if err := g.Bump(ctx, "1"); !errors.Is(err, errShortfall) {
		t.Fatalf("Bump without replicas = %v, want a shortfall", err)
	}
	if readOne(t, g, "1").Base == before.Base || c.br.Open() {
		t.Fatalf("the master did not apply the bump, or the breaker opened (%v)", c.br.Open())
	}
}
