package cacheaside

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// scriptCalls counts the script commands (EVALSHA, EVAL) a client sends,
// those that only accepts when it is set (isLeaseCall: lease.lua's).
type scriptCalls struct {
	n    atomic.Int64
	only func(redis.Cmder) bool
}

func (h *scriptCalls) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if name := c.Name(); (name == "evalsha" || name == "eval") && (h.only == nil || h.only(c)) {
			h.n.Add(1)
		}
	}
}

func (h *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds...); return next(ctx, cmds) }
}

// A Mutex waiter whose shared subscription is cut (CLIENT KILL TYPE
// pubsub) is woken once the subscription is back, and re-checks at once:
// an announcement sent during the gap was lost. Its re-check timer is an
// hour, so only the reconnection can wake it. The server is private: the
// kill would cut other tests' subscriptions on a shared one.
func TestMutex_resubscribeWakesWaiter(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	newClient := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: 5 * time.Minute}
	holder := newEntity[user](t, newCache(t, newClient(), "ak", nil), "hot", p)
	client := newClient()
	var calls scriptCalls
	client.AddHook(&calls)
	wc := newCache(t, client, "ak", nil)
	wc.recheck = time.Hour
	waiter := newEntity[user](t, wc, "hot", p)

	g := startHeldLoad(t, holder, waiter, "v")
	// The waiter's lease call, then its re-check once subscribed.
	waitFor(t, time.Minute, func() bool { return waiter.Stats().LockWaits == 1 && calls.n.Load() == 2 })

	if n, err := client.ClientKillByFilter(context.Background(), "TYPE", "pubsub").Result(); err != nil || n != 1 {
		t.Fatalf("CLIENT KILL TYPE pubsub = %d, %v; want the waiter's subscription", n, err)
	}
	waitFor(t, 30*time.Second, func() bool { return calls.n.Load() >= 3 })

	if res := g.finish(t); res.err != nil || res.u.Name != "v" {
		t.Fatalf("waiter: %+v, %v", res.u, res.err)
	}
}

// heldLoad is a Mutex rebuild of id "1" held open: the holder's loader has
// begun and waits for finish, and a waiter, started after it, is on its
// way to wait for the holder's value.
type heldLoad struct {
	release func() error   // lets the holder's loader return; the holder's Get error
	done    chan getResult // the waiter's Get result
}

// holdLoad starts holder.Get of id, whose loader returns a user named name
// once release is called, and returns once that loader has begun (the
// rebuild lease is the holder's). release returns the holder's Get error.
func holdLoad(holder *Entity[user], id, name string) (release func() error) {
	gate, held, entered := make(chan struct{}), make(chan error, 1), make(chan struct{})
	go func() {
		_, err := holder.Get(context.Background(), id, func(ctx context.Context, id string) (user, error) {
			close(entered)
			<-gate
			return user{ID: id, Name: name}, nil
		})
		held <- err
	}()
	<-entered
	return func() error {
		close(gate)
		return <-held
	}
}

// startHeldLoad starts holder.Get of id "1" (see holdLoad) and, once its
// loader has begun, waiter.Get of the same id, whose loader fails the test.
func startHeldLoad(t *testing.T, holder, waiter *Entity[user], name string) *heldLoad {
	t.Helper()
	g := &heldLoad{release: holdLoad(holder, "1", name), done: make(chan getResult, 1)}
	go func() {
		u, err := waiter.Get(context.Background(), "1", func(context.Context, string) (user, error) {
			t.Error("the waiter loaded")
			return user{}, nil
		})
		g.done <- getResult{u, err}
	}()
	return g
}

// finish lets the holder's loader return, fails the test if the holder's
// Get failed, and returns the waiter's result.
func (g *heldLoad) finish(t *testing.T) getResult {
	t.Helper()
	if err := g.release(); err != nil {
		t.Fatal(err)
	}
	return <-g.done
}
