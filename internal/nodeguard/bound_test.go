package nodeguard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/testcontainers"
)

// A call that runs out of a package's bound (WithBound, shorter than the
// guard's own Timeout) is a node failure; a call whose caller's own
// deadline passed first is not.
func TestGuard_packageBound(t *testing.T) {
	c, px, ns := proxied(t)
	set, release := Install(c, Options{Threshold: 2, Cooldown: time.Minute, Timeout: time.Minute})
	defer release()
	g := set.Guards()[c.Options().Addr]
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	px.Stall()
	defer px.Heal()
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := c.Get(ctx, ns+":k").Err()
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call %d under the caller's deadline: %v", i, err)
		}
	}
	if g.Down() {
		t.Fatal("the callers' own deadlines opened the breaker")
	}
	for i := range 2 {
		ctx, cancel := WithBound(context.Background(), 50*time.Millisecond)
		err := c.Get(ctx, ns+":k").Err()
		cancel()
		if err == nil {
			t.Fatalf("call %d under a package's bound answered during the stall", i)
		}
	}
	if !g.Down() || g.Opens() != 1 {
		t.Fatalf("after 2 calls ran out of their bound: down %v, opens %d; want the breaker open", g.Down(), g.Opens())
	}
	if err := c.Get(context.Background(), ns+":k").Err(); !errors.Is(err, ErrDown) {
		t.Fatalf("call while down: %v, want ErrDown", err)
	}
}

// On a client that does not end its reads at the context's deadline, a
// stalled call that ran out of its bound counts as a failure at the
// bound, not when the client's read timeout (a minute here) ends it: the
// breaker opens, its trip ends the read, and the call returns.
func TestGuard_boundWithoutContextTimeout(t *testing.T) {
	r := testcontainers.Redis(t)
	px, err := faultproxy.New(r.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	c := redis.NewClient(&redis.Options{Addr: px.Addr(), ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	set, release := Install(c, Options{Threshold: 1, Cooldown: time.Minute, Timeout: -1})
	defer release()
	g := set.Guards()[c.Options().Addr]
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	px.Stall()
	defer px.Heal()
	done := make(chan error, 1)
	go func() {
		ctx, cancel := WithBound(context.Background(), 100*time.Millisecond)
		defer cancel()
		done <- c.Get(ctx, r.Namespace+":k").Err()
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the stalled call answered")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled call still waits 30 s after its 100 ms bound: its failure waited for the client's read timeout")
	}
	if !g.Down() {
		t.Fatal("the breaker is closed after a call ran out of its bound")
	}
}
