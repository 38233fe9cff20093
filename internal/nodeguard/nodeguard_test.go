package nodeguard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/testcontainers"
)

// proxied returns a client of Redis through a fault proxy, with the
// settings asidekit recommends but a long read timeout: only the guard's
// deadline can cut a stalled call short.
func proxied(t *testing.T) (*redis.Client, *faultproxy.Proxy, string) {
	t.Helper()
	r := testcontainers.Redis(t)
	px, err := faultproxy.New(r.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	c := redis.NewClient(&redis.Options{Addr: px.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute,
		DialTimeout: 5 * time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c, px, r.Namespace
}

// waitUp calls until the node answers again (a probe closed the breaker).
func waitUp(t *testing.T, c *redis.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the node never answered again")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A stalled node: the first Threshold calls end at the guard's deadline
// (the client would wait a minute), then every call fails at once with
// ErrDown until a probe after the heal closes the breaker.
func TestGuard_stall(t *testing.T) {
	c, px, ns := proxied(t)
	set, release := Install(c, Options{Threshold: 2, Cooldown: 50 * time.Millisecond, Timeout: 200 * time.Millisecond})
	defer release()
	g := set.Guards()[c.Options().Addr]
	if g == nil {
		t.Fatal("no guard for the node")
	}
	ctx := context.Background()
	if err := c.Set(ctx, ns+":k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	px.Stall()
	for i := range 2 {
		if err := c.Get(ctx, ns+":k").Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("stalled call %d: err = %v, want the guard's deadline", i, err)
		}
	}
	if !g.Down() || g.Opens() != 1 {
		t.Fatalf("after 2 timeouts: down %v opens %d", g.Down(), g.Opens())
	}
	if err := c.Get(ctx, ns+":k").Err(); !errors.Is(err, ErrDown) {
		t.Fatalf("call while down: err = %v, want ErrDown", err)
	}
	if err := c.Pipeline().Get(ctx, ns+":k").Err(); err != nil {
		t.Fatal(err)
	}
	pipe := c.Pipeline()
	get := pipe.Get(ctx, ns+":k")
	if _, err := pipe.Exec(ctx); !errors.Is(err, ErrDown) || !errors.Is(get.Err(), ErrDown) {
		t.Fatalf("pipeline while down: %v, command %v; want ErrDown", err, get.Err())
	}
	px.Heal()
	waitUp(t, c)
	if g.Down() {
		t.Fatal("still down after a call succeeded")
	}
	if v, err := c.Get(ctx, ns+":k").Result(); err != nil || v != "v" {
		t.Fatalf("after the heal: %q, %v", v, err)
	}
}

// A cut node: the failures open the breaker, and a caller's own canceled
// context charges nothing.
func TestGuard_cut(t *testing.T) {
	c, px, ns := proxied(t)
	set, release := Install(c, Options{Threshold: 3, Cooldown: 50 * time.Millisecond})
	defer release()
	g := set.Guards()[c.Options().Addr]
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	px.Cut()
	for range 5 {
		_ = c.Get(canceled, ns+":k").Err()
	}
	if g.Down() {
		t.Fatal("the caller's canceled context opened the breaker")
	}
	for range 3 {
		if err := c.Get(ctx, ns+":k").Err(); err == nil || errors.Is(err, ErrDown) {
			t.Fatalf("cut call: err = %v, want the link's error", err)
		}
	}
	if err := c.Get(ctx, ns+":k").Err(); !errors.Is(err, ErrDown) {
		t.Fatalf("after 3 failures: err = %v, want ErrDown", err)
	}
	px.Heal()
	waitUp(t, c)
}

// The switch for tests: with the guard off, a stalled node costs every
// call the client's own timeout (here cut short by the caller), and the
// breaker never opens.
func TestGuard_off(t *testing.T) {
	c, px, ns := proxied(t)
	set, release := Install(c, Options{Threshold: 1, Timeout: 50 * time.Millisecond})
	defer release()
	g := set.Guards()[c.Options().Addr]
	g.off = true
	px.Stall()
	defer px.Heal()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := c.Get(ctx, ns+":k").Err()
		cancel()
		if errors.Is(err, ErrDown) {
			t.Fatalf("guard off: ErrDown")
		}
	}
	if g.Down() {
		t.Fatal("guard off: breaker opened")
	}
}

// A server's reply (an error one included) is a node at work, and a
// blocking command may outlast the guard's deadline.
func TestGuard_repliesAndBlocking(t *testing.T) {
	c, _, ns := proxied(t)
	ctx := context.Background()
	// A connection dialled first: on a busy machine the dial through the
	// proxy may outlast the deadline, which is not what this test is about.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The deadline is well below BLPOP's block, well above a busy
	// machine's reply time.
	set, release := Install(c, Options{Threshold: 1, Timeout: 400 * time.Millisecond})
	defer release()
	g := set.Guards()[c.Options().Addr]
	if err := c.Do(ctx, "NOSUCHCOMMAND").Err(); err == nil {
		t.Fatal("no error for an unknown command")
	}
	if err := c.Get(ctx, ns+":absent").Err(); err != redis.Nil {
		t.Fatalf("GET absent: %v", err)
	}
	if err := c.BLPop(ctx, 1500*time.Millisecond, ns+":list").Err(); err != redis.Nil {
		t.Fatalf("BLPOP past the guard's deadline: err = %v, want redis.Nil", err)
	}
	if g.Down() {
		t.Fatal("a reply opened the breaker")
	}
}

// Install is once per client; the Set is shared until every Install is
// released, and a client the guard does not know gets none.
func TestInstall_shared(t *testing.T) {
	c, _, _ := proxied(t)
	a, ra := Install(c, Options{})
	b, rb := Install(c, Options{Threshold: 9})
	if a != b || len(a.Guards()) != 1 {
		t.Fatalf("two Installs: %p %p, %d guards", a, b, len(a.Guards()))
	}
	ra()
	ra()
	if s, r := Install(c, Options{}); s != a {
		t.Fatal("released once of twice: a new Set")
	} else {
		r()
	}
	rb()
	s, r := Install(c, Options{})
	defer r()
	if s == a {
		t.Fatal("every Install released: the old Set returned")
	}
	ring := redis.NewRing(&redis.RingOptions{})
	defer ring.Close()
	if s, _ := Install(ring, Options{}); s != nil {
		t.Fatal("a Ring got a guard")
	}
}

// On a Cluster each master gets a guard of its own.
func TestInstall_cluster(t *testing.T) {
	r := testcontainers.RedisCluster(t)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.Addrs})
	defer c.Close()
	set, release := Install(c, Options{})
	defer release()
	ctx := context.Background()
	var mu sync.Mutex
	masters := map[string]bool{}
	if err := c.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
		mu.Lock()
		masters[n.Options().Addr] = true
		mu.Unlock()
		return n.Ping(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	gs := set.Guards()
	for a := range masters {
		if gs[a] == nil {
			t.Errorf("master %s has no guard", a)
		}
	}
	if len(masters) < 2 {
		t.Fatalf("%d masters", len(masters))
	}
}

// Once every Install is released, the hooks left on the client let every
// call through: no prober would close their breakers.
func TestInstall_releasedPassesThrough(t *testing.T) {
	c, px, ns := proxied(t)
	_, release := Install(c, Options{Threshold: 1, Timeout: 100 * time.Millisecond})
	ctx := context.Background()
	px.Cut()
	_ = c.Get(ctx, ns+":k").Err()
	if err := c.Get(ctx, ns+":k").Err(); !errors.Is(err, ErrDown) {
		t.Fatalf("while installed: %v, want ErrDown", err)
	}
	release()
	px.Heal()
	if err := c.Get(ctx, ns+":k").Err(); err != redis.Nil {
		t.Fatalf("after release and heal: %v, want redis.Nil", err)
	}
}
