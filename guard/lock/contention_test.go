package lock_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// The contention test: 3 Lockers (3 clients, as 3 processes would
// have) × 200 goroutines contend for one lock for 2 s.
const (
	contendLockers    = 3
	contendGoroutines = 200
	contendFor        = 2 * time.Second

	contendMinAcquired = 100              // or run longer than contendFor
	contendCap         = 40 * time.Second // but never longer than this
)

func TestLock_contention(t *testing.T) {
	contend(t, testcontainers.Redis(t))
}

func TestLock_contention_cluster(t *testing.T) {
	contend(t, testcontainers.RedisCluster(t))
}

func contend(t *testing.T, rn *testcontainers.RedisNamespace) {
	ctx := context.Background()
	lockers := make([]*lock.Locker, contendLockers)
	for i := range lockers {
		lockers[i] = newLocker(t, rn, rn.NewClient(t))
		// Start each shared subscription before the clock runs, as a
		// service would at startup, so that every wait can end on a
		// notification.
		if err := lockers[i].Listen(ctx); err != nil {
			t.Fatal(err)
		}
	}

	var (
		inside     atomic.Int32 // holders inside the critical section
		overlaps   atomic.Int64 // times a holder found another inside
		lastFence  atomic.Int64
		badFences  atomic.Int64
		acquired   atomic.Int64
		lostOnExit atomic.Int64 // Release that found the lock not held
	)
	// The ttl outlives the test: every wait must end on a release's
	// notification, since a waiter's timer is the holder's ttl long.
	const ttl = 30 * time.Second
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Contend for 2 s; on a starved machine (2 cores shared by many test
	// runs) go on until the run is big enough to mean something, within a
	// cap. Only counts decide the result, never the time taken.
	start := time.Now()
	go func() {
		for runCtx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			took := time.Since(start)
			if took >= contendFor && acquired.Load() >= contendMinAcquired || took >= contendCap {
				cancel()
			}
		}
	}()
	var wg sync.WaitGroup
	for _, l := range lockers {
		for range contendGoroutines {
			wg.Go(func() {
				for {
					lk, err := l.Obtain(runCtx, "hot", ttl, &lock.ObtainOptions{WaitTimeout: -1})
					if err != nil {
						if !errors.Is(err, lock.ErrNotObtained) || runCtx.Err() == nil {
							t.Errorf("Obtain: %v", err)
						}
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					if prev := lastFence.Swap(lk.Fence()); lk.Fence() <= prev {
						badFences.Add(1)
					}
					acquired.Add(1)
					runtime.Gosched()
					inside.Add(-1)
					if err := lk.Release(ctx); err != nil {
						lostOnExit.Add(1)
						t.Errorf("Release: %v", err)
					}
				}
			})
		}
	}
	wg.Wait()

	var total lock.Stats
	for _, l := range lockers {
		s := l.Stats()
		total.Obtained += s.Obtained
		total.Waits += s.Waits
		total.WakeupsNotified += s.WakeupsNotified
		total.WakeupsTimer += s.WakeupsTimer
		total.Notifications += s.Notifications
		total.Errors += s.Errors
	}
	t.Logf("%d acquisitions in %v; totals: %+v", acquired.Load(), time.Since(start).Round(time.Millisecond), total)

	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d times two holders were inside the critical section", n)
	}
	if n := badFences.Load(); n != 0 {
		t.Errorf("%d fences did not increase", n)
	}
	if acquired.Load() < contendMinAcquired {
		t.Errorf("only %d acquisitions in %v", acquired.Load(), contendCap)
	}
	// Each acquisition incremented the fence counter once, and nothing
	// else did.
	if last := lastFence.Load(); last != acquired.Load() {
		t.Errorf("last fence %d, acquisitions %d", last, acquired.Load())
	}
	if total.Obtained != uint64(acquired.Load()) || total.Errors != 0 {
		t.Errorf("Stats count %d obtained, %d errors; the test counted %d acquisitions", total.Obtained, total.Errors, acquired.Load())
	}
	// Waiters woke by notification, never by the retry timer.
	if total.WakeupsTimer != 0 {
		t.Errorf("%d wake-ups by the retry timer, want 0", total.WakeupsTimer)
	}
	if total.Waits == 0 || total.WakeupsNotified == 0 {
		t.Errorf("no waits or no wake-ups by notification: %+v", total)
	}
}
