package cacheaside

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// Redis down: the test's own redis-server is stopped mid-run and started
// again. Reads keep succeeding from the loader (or fail fast with
// ErrOverloaded), loader concurrency never exceeds MaxConcurrentLoads, the
// breaker skips Redis while it is down, and caching resumes afterwards.
func TestOutage_failOpen(t *testing.T) {
	t.Parallel()
	const maxLoads, readers = 4, 32
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{
		Addr: srv.Addr, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1,
	})
	t.Cleanup(func() { _ = client.Close() })
	c := newCache(t, client, "outage", &Options{BreakerThreshold: 3, BreakerCooldown: 100 * time.Millisecond})
	e := newEntity[user](t, c, "user", Policy{TTL: time.Minute, Strategy: SingleFlight, MaxConcurrentLoads: maxLoads})

	var active, peak, loads atomic.Int64
	load := func(ctx context.Context, id string) (user, error) {
		n := active.Add(1)
		defer active.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		loads.Add(1)
		time.Sleep(2 * time.Millisecond)
		return user{ID: id}, nil
	}

	var phase atomic.Int32 // 0 up, 1 down, 2 back up
	var ok [3]atomic.Int64
	var overloaded, failed atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	ctx := context.Background()
	for g := 0; g < readers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i++ {
				ph := phase.Load()
				_, err := e.Get(ctx, strconv.Itoa(i%50), load)
				switch {
				case err == nil:
					ok[ph].Add(1)
				case errors.Is(err, ErrOverloaded):
					overloaded.Add(1)
				default:
					failed.Add(1)
					t.Errorf("phase %d: %v", ph, err)
					return
				}
			}
		}()
	}
	waitFor(t, 10*time.Second, func() bool { return ok[0].Load() > 500 })
	srv.Stop()
	phase.Store(1)
	waitFor(t, 10*time.Second, func() bool { return ok[1].Load() > 500 })
	bypassed := e.Stats().Bypassed
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	loadsAtRestart := loads.Load()
	phase.Store(2)
	// Caching resumes: the loader goes quiet again while reads go on.
	waitFor(t, 20*time.Second, func() bool {
		before := loads.Load()
		reads := ok[2].Load()
		time.Sleep(200 * time.Millisecond)
		return ok[2].Load() > reads+200 && loads.Load() == before
	})
	stop.Store(true)
	wg.Wait()

	s := e.Stats()
	t.Logf("reads ok up/down/up: %d/%d/%d, overloaded %d, loads %d (since restart %d), peak concurrency %d, stats %+v",
		ok[0].Load(), ok[1].Load(), ok[2].Load(), overloaded.Load(), loads.Load(), loads.Load()-loadsAtRestart, peak.Load(), s)
	if failed.Load() != 0 {
		t.Fatalf("%d reads failed", failed.Load())
	}
	if p := peak.Load(); p > maxLoads {
		t.Fatalf("peak loader concurrency %d > MaxConcurrentLoads %d", p, maxLoads)
	}
	if bypassed == 0 {
		t.Fatal("the breaker never opened while Redis was down")
	}
	if s.CacheErrors == 0 {
		t.Fatal("no cache errors counted while Redis was down")
	}
	if n := client.Exists(ctx, "outage:{user:1}").Val(); n != 1 {
		t.Fatal("nothing cached after Redis came back")
	}
}

// An Invalidate that fails while Redis is down is retried in the
// background and lands once Redis is back.
func TestOutage_invalidationRetried(t *testing.T) {
	t.Parallel()
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	// The breaker opens at the first failure and stays open (holding the
	// retries back) until the test closes it.
	c := newCache(t, client, "outage", &Options{BreakerThreshold: 1, BreakerCooldown: time.Hour})
	e := newEntity[user](t, c, "user", Policy{})
	ctx := context.Background()
	if err := e.Set(ctx, "1", user{ID: "1", Name: "old"}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	err := e.Invalidate(ctx, "1")
	if !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Invalidate with Redis down: err = %v, want ErrInvalidationPending", err)
	}
	if c.retry.size() != 1 {
		t.Fatalf("queued invalidations = %d, want 1", c.retry.size())
	}
	if err := srv.Start(); err != nil { // an empty server: write the stale value back
		t.Fatal(err)
	}
	stale := encodeEntry(header{expiry: time.Now().Add(time.Hour).UnixMilli()}, []byte(`{"id":"1","name":"old"}`))
	if err := client.Set(ctx, "outage:{user:1}", stale, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if c.retry.size() != 1 {
		t.Fatal("the invalidation was retried while the breaker was open")
	}
	c.br.Success() // Redis is back: close the breaker
	waitFor(t, 20*time.Second, func() bool { return c.retry.size() == 0 })
	if client.Exists(ctx, "outage:{user:1}").Val() != 0 {
		t.Fatal("the retried invalidation did not delete the entry")
	}
	if s := e.Stats(); s.InvalidationsDeferred != 1 || s.InvalidationRetries == 0 {
		t.Fatalf("stats = %+v", s)
	}
}

// newDeadClient returns a client of srv with short timeouts and no
// retries, closed at cleanup.
func newDeadClient(t testing.TB, srv *testcontainers.RedisServer) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
