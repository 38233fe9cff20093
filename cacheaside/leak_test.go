package cacheaside

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"go.uber.org/goleak"
)

// After Close, no goroutine of the Cache is left: not the shared
// subscription, not a background refresh, not the invalidation retrier.
func TestCache_Close_noGoroutineLeft(t *testing.T) {
	r := testcontainers.Redis(t)
	srv := testcontainers.NewRedisServer(t)
	ignore := goleak.IgnoreCurrent()

	client := r.NewClient(t)
	c, err := New(client, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The subscription: a Mutex wait.
	m := newEntity[user](t, c, "m", Policy{Strategy: Mutex})
	// The near cache: its invalidation feed and its store.
	newEntity[user](t, c, "near", Policy{Local: &LocalPolicy{}})
	waitLocal(t, c)
	otherClient := r.NewClient(t)
	otherCache := newCache(t, otherClient, r.Namespace, nil)
	other := newEntity[user](t, otherCache, "m", Policy{Strategy: Mutex})
	entered, gate := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = other.Get(ctx, "1", func(ctx context.Context, id string) (user, error) { close(entered); <-gate; return user{ID: id}, nil })
	}()
	<-entered
	waited := make(chan struct{})
	go func() { _, _ = m.Get(ctx, "1", (&counter{}).load); close(waited) }()
	waitFor(t, 10*time.Second, func() bool { return m.Stats().LockWaits == 1 })
	close(gate)
	<-waited
	// A background refresh that is still running at Close.
	// Grace of a minute: the Get past the expiry is served stale and starts
	// the refresh however slow the machine (a Get past Grace would load in
	// the foreground, on a loader that only Close ends).
	a := newEntity[user](t, c, "a", Policy{Strategy: AsyncRefresh, TTL: 50 * time.Millisecond, Grace: time.Minute, Jitter: -1})
	_, _ = a.Get(ctx, "1", (&counter{}).load)
	time.Sleep(80 * time.Millisecond)
	refreshing := make(chan struct{})
	_, _ = a.Get(ctx, "1", func(ctx context.Context, id string) (user, error) {
		close(refreshing)
		<-ctx.Done() // only Close ends it
		return user{}, ctx.Err()
	})
	<-refreshing
	// A pending invalidation retry, on a Redis that is down.
	deadClient := newDeadClient(t, srv)
	dead := newCache(t, deadClient, "dead", nil)
	d := newEntity[user](t, dead, "d", Policy{})
	srv.Stop()
	_ = d.Invalidate(ctx, "1")
	if dead.retry.size() != 1 {
		t.Fatal("invalidation not queued")
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := dead.Close(); err != nil {
		t.Fatal(err)
	}
	_ = otherCache.Close()
	for _, cl := range []interface{ Close() error }{client, otherClient, deadClient} {
		_ = cl.Close()
	}
	goleak.VerifyNone(t, testcontainers.GoleakOptions(ignore)...)
}
