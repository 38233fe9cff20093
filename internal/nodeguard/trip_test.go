package nodeguard

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// signalHook reports each pipeline the guard let through on started.
type signalHook struct{ started chan struct{} }

func (h signalHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h signalHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}

func (h signalHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.started <- struct{}{}
		return next(ctx, cmds)
	}
}

// The trip: a call in flight on a stalled node (a pipeline too big for
// the guard's deadline; the client would wait a minute) ends with ErrDown
// the moment another call's timeout opens the breaker, instead of
// waiting out its own deadline.
func TestGuard_tripEndsInFlight(t *testing.T) {
	c, px, ns := proxied(t)
	set, release := Install(c, Options{Threshold: 1, Cooldown: 50 * time.Millisecond, Timeout: 100 * time.Millisecond})
	defer release()
	g := set.Guards()[c.Options().Addr]
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	h := signalHook{started: make(chan struct{}, 1)}
	c.AddHook(h) // inside the guard's hook: it sees only the calls let through
	px.Stall()
	done := make(chan error, 1)
	go func() {
		pipe := c.Pipeline()
		for i := range MaxBoundedPipeline + 1 {
			pipe.Get(ctx, ns+":k"+string(rune('a'+i)))
		}
		_, err := pipe.Exec(ctx)
		done <- err
	}()
	<-h.started
	if err := c.Get(ctx, ns+":k").Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled call: err = %v, want the guard's deadline", err)
	}
	if !g.Down() {
		t.Fatal("the breaker did not open")
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrDown) {
			t.Fatalf("the pipeline in flight: err = %v, want ErrDown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the pipeline in flight still waits after the breaker opened")
	}
	px.Heal()
	waitUp(t, c)
	// The trip's deadlines stay on no connection: every call answers.
	for range 10 {
		if err := c.Get(ctx, ns+":k").Err(); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("after the heal: %v", err)
		}
	}
}

// A tracked connection still lets go-redis's pool check the socket.
func TestTrackedConn_netConn(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	var cs conns
	tc := &trackedConn{Conn: a, cs: &cs}
	cs.add(tc)
	if tc.NetConn() != a {
		t.Fatal("NetConn is not the wrapped connection")
	}
	if err := tc.Close(); err != nil {
		t.Fatal(err)
	}
	if len(cs.set) != 0 {
		t.Fatal("a closed connection is still tracked")
	}
}
