package cacheaside

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// The breakdown scenario: one hot key, 4 Cache instances on separate
// clients (4 processes) × 100 goroutines reading it while it expires or is
// invalidated. It reports the loader calls after the warm-up load.
const (
	breakdownProcs   = 4
	breakdownReaders = 100
	breakdownLoad    = 50 * time.Millisecond
	breakdownTTL     = time.Second
)

func runBreakdown(t *testing.T, r *testcontainers.RedisNamespace, s Strategy, invalidate bool) int64 {
	t.Helper()
	var loads atomic.Int64
	start := time.Now()
	var mu sync.Mutex
	var at []time.Duration
	defer func() {
		mu.Lock()
		t.Logf("loads at %v", at[:min(len(at), 10)])
		mu.Unlock()
	}()
	load := func(ctx context.Context, id string) (user, error) {
		mu.Lock() // loads and at move together
		n := loads.Add(1)
		at = append(at, time.Since(start))
		mu.Unlock()
		select {
		case <-time.After(breakdownLoad):
		case <-ctx.Done():
			return user{}, ctx.Err()
		}
		return user{ID: id, Ver: int(n)}, nil
	}
	p := Policy{TTL: breakdownTTL, Jitter: -1, Strategy: s, LockTTL: 5 * time.Second, WaitTimeout: 20 * time.Second, MaxConcurrentLoads: -1}
	switch {
	case invalidate:
		p.TTL = time.Minute
	case s == EarlyRefresh:
		// XFetch refreshes ahead of the expiry, so the next refresh comes
		// sooner than a TTL after the first: leave room for the readers.
		p.TTL = 2 * breakdownTTL
	}
	ents := make([]*Entity[user], breakdownProcs)
	for i := range ents {
		ents[i] = newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	}
	ctx := context.Background()
	if _, err := ents[0].Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	warm := loads.Load()

	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 1)
	for _, e := range ents {
		for g := 0; g < breakdownReaders; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					if _, err := e.Get(ctx, "1", load); err != nil {
						select {
						case errs <- err:
						default:
						}
						return
					}
					reads.Add(1)
				}
			}()
		}
	}
	// Let the readers run on the warm key, then expire or invalidate it.
	waitFor(t, 10*time.Second, func() bool { return reads.Load() > 1000 })
	if invalidate {
		if err := ents[1].Invalidate(ctx, "1"); err != nil {
			t.Error(err)
		}
	}
	waitFor(t, 20*time.Second, func() bool { return loads.Load() > warm })
	// Keep reading after the rebuild until every reader has had about two
	// more reads, but stop well before the next expiry however slow the
	// machine is.
	rebuilt, after := time.Now(), reads.Load()
	window := min(p.TTL/2, 5*time.Second)
	waitFor(t, 10*time.Second, func() bool {
		return reads.Load() > after+2*breakdownProcs*breakdownReaders || time.Since(rebuilt) > window
	})
	stop.Store(true)
	wg.Wait()
	t.Logf("stopped at %v after %d reads", time.Since(start), reads.Load())
	select {
	case err := <-errs:
		t.Fatalf("reader: %v", err)
	default:
	}
	// The loads of this expiry start within a TTL of the first one: the
	// next expiry comes a TTL after the rebuilt value is stored, and a
	// starved machine may keep the readers going until then.
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(at)
	first := at[warm]
	n := int64(0)
	for _, d := range at[warm:] {
		if d-first < p.TTL {
			n++
		}
	}
	if late := int64(len(at)) - warm - n; late > 0 {
		t.Logf("%d loads of the next expiry, not counted", late)
	}
	return n
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func checkBreakdown(t *testing.T, s Strategy, loads int64) {
	t.Helper()
	t.Logf("%v: %d loader calls for one expiry", s, loads)
	switch s {
	case None:
		if loads <= 1 {
			t.Fatalf("None: %d loader calls; the baseline must stampede (> 1)", loads)
		}
	case SingleFlight:
		if loads < 1 || loads > breakdownProcs {
			t.Fatalf("SingleFlight: %d loader calls, want 1..%d", loads, breakdownProcs)
		}
	default:
		if loads != 1 {
			t.Fatalf("%v: %d loader calls, want exactly 1", s, loads)
		}
	}
}

func testBreakdown(t *testing.T, redis func(testing.TB) *testcontainers.RedisNamespace) {
	for _, s := range []Strategy{None, SingleFlight, Mutex, AsyncRefresh, EarlyRefresh} {
		for _, inv := range []bool{false, true} {
			name := s.String() + "/expire"
			if inv {
				name = s.String() + "/invalidate"
			}
			t.Run(name, func(t *testing.T) {
				checkBreakdown(t, s, runBreakdown(t, redis(t), s, inv))
			})
		}
	}
}

func TestBreakdown(t *testing.T) {
	t.Parallel()
	testBreakdown(t, testcontainers.Redis)
}

func TestBreakdown_cluster(t *testing.T) {
	t.Parallel()
	testBreakdown(t, testcontainers.RedisCluster)
}

// With AsyncRefresh, once the key is warm no reader waits for the loader:
// every read past the logical expiry completes while the refresh is held
// inside the loader, and exactly one refresh runs.
func TestAsyncRefresh_readersNeverWait(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		t.Run(name, func(t *testing.T) {
			r := redis(t)
			gate := make(chan struct{})
			var loads atomic.Int64
			load := func(ctx context.Context, id string) (user, error) {
				if n := loads.Add(1); n > 1 {
					<-gate // the refresh blocks until every reader is done
				}
				return user{ID: id, Ver: int(loads.Load())}, nil
			}
			p := Policy{TTL: 300 * time.Millisecond, Jitter: -1, Grace: time.Minute, Strategy: AsyncRefresh}
			ents := make([]*Entity[user], breakdownProcs)
			for i := range ents {
				ents[i] = newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
			}
			ctx := context.Background()
			if _, err := ents[0].Get(ctx, "1", load); err != nil {
				t.Fatal(err)
			}
			time.Sleep(400 * time.Millisecond) // past the logical expiry
			var wg sync.WaitGroup
			var bad atomic.Int64
			for _, e := range ents {
				for g := 0; g < breakdownReaders; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < 5; i++ {
							u, err := e.Get(ctx, "1", load)
							if err != nil || u.Ver != 1 {
								bad.Add(1)
							}
						}
					}()
				}
			}
			wg.Wait() // returns while the refresh is still inside the loader
			close(gate)
			if bad.Load() != 0 {
				t.Fatalf("%d reads failed or were not the stale value", bad.Load())
			}
			waitFor(t, 10*time.Second, func() bool {
				u, err := ents[2].Get(ctx, "1", load)
				return err == nil && u.Ver == 2
			})
			if n := loads.Load() - 1; n != 1 {
				t.Fatalf("refresh loads = %d, want 1", n)
			}
			var stale uint64
			for _, e := range ents {
				stale += e.Stats().StaleServed
			}
			if stale < breakdownProcs*breakdownReaders*5 {
				t.Fatalf("stale served = %d, want every read", stale)
			}
		})
	}
}

// Mutex waiters are woken by the shared subscription: with the fallback
// re-check disabled, they can only get the value through a notification.
func TestMutex_wakesOnNotification(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		t.Run(name, func(t *testing.T) {
			r := redis(t)
			p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: time.Minute}
			holder := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
			wc := newCache(t, r.NewClient(t), r.Namespace, nil)
			wc.recheck = time.Hour
			waiter := newEntity[user](t, wc, "hot", p)
			entered, gate := make(chan struct{}), make(chan struct{})
			var loads atomic.Int64
			load := func(ctx context.Context, id string) (user, error) {
				loads.Add(1)
				close(entered)
				<-gate
				return user{ID: id}, nil
			}
			ctx := context.Background()
			go func() { _, _ = holder.Get(ctx, "1", load) }()
			<-entered
			done := make(chan error)
			go func() {
				_, err := waiter.Get(ctx, "1", load)
				done <- err
			}()
			waitFor(t, 10*time.Second, func() bool { return waiter.Stats().LockWaits == 1 })
			close(gate)
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("waiter not woken by the notification")
			}
			if loads.Load() != 1 {
				t.Fatalf("loads = %d", loads.Load())
			}
		})
	}
}

// A waiter whose lease holder never finishes gets ErrWaitTimeout after
// WaitTimeout, counted.
func TestMutex_waitTimeout(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: 300 * time.Millisecond}
	holder := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	waiter := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	entered, gate := make(chan struct{}), make(chan struct{})
	defer close(gate)
	go func() {
		_, _ = holder.Get(context.Background(), "1", func(ctx context.Context, id string) (user, error) {
			close(entered)
			<-gate
			return user{}, nil
		})
	}()
	<-entered
	_, err := waiter.Get(context.Background(), "1", (&counter{}).load)
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("err = %v, want ErrWaitTimeout", err)
	}
	if s := waiter.Stats(); s.LockWaits != 1 || s.LockTimeouts != 1 || s.Loads != 0 {
		t.Fatalf("stats = %+v", s)
	}
}
