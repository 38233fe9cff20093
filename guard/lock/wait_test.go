package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestLocker_Obtain_wakesOnRelease(t *testing.T) {
	rn := testcontainers.Redis(t)
	a := newLocker(t, rn, rn.Client)
	b := newLocker(t, rn, rn.NewClient(t))
	ctx := context.Background()

	// The holder's ttl is far longer than the test: only the release's
	// notification can wake the waiter in time (its timer is ttl-long).
	held := mustObtain(t, a, "r", 5*time.Minute)
	got := make(chan *lock.Lock, 1)
	go func() {
		lk, err := b.Obtain(ctx, "r", time.Minute, &lock.ObtainOptions{WaitTimeout: 2 * time.Minute})
		if err != nil {
			t.Error(err)
		}
		got <- lk
	}()
	waitFor(t, "the waiter to sleep", func() bool {
		return lock.Sleeps(b) >= 1 && b.Stats().Subscriptions == 1
	})
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lk := <-got
	if lk == nil {
		t.FailNow()
	}
	defer lk.Release(ctx)
	if lk.Fence() != held.Fence()+1 {
		t.Errorf("fence = %d after %d", lk.Fence(), held.Fence())
	}
	s := b.Stats()
	if s.WakeupsNotified != 1 || s.WakeupsTimer != 0 || s.Notifications != 1 {
		t.Errorf("Stats = %+v, want one wake-up by notification, none by timer", s)
	}
}

func TestLocker_Obtain_holderStopsRefreshing(t *testing.T) {
	rn := testcontainers.Redis(t)
	a := newLocker(t, rn, rn.Client)
	b := newLocker(t, rn, rn.NewClient(t))
	ctx := context.Background()

	// The watchdog refreshes every ttl/3: a stall of up to 2/3 ttl (1 s,
	// five times the 200 ms a busy machine can cost) does not let the lock
	// lapse.
	const ttl = 1500 * time.Millisecond
	holder := mustObtain(t, a, "r", ttl)
	_, stop := holder.AutoRefresh(ctx)
	// While the watchdog refreshes, the lock outlives its ttl (time must
	// pass here: that is what is tested, not a wait for an event).
	time.Sleep(2 * ttl)
	if _, err := b.TryObtain(ctx, "r", ttl); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("TryObtain while the holder refreshes = %v, want ErrNotObtained", err)
	}
	// The holder stops refreshing and never releases: it has crashed.
	stop()
	start := time.Now()
	lk, err := b.Obtain(ctx, "r", time.Minute, &lock.ObtainOptions{WaitTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release(ctx)
	t.Logf("replaced after %v (ttl %v)", time.Since(start), ttl)
	if lk.Fence() <= holder.Fence() {
		t.Errorf("new fence %d is not above %d", lk.Fence(), holder.Fence())
	}
	if err := holder.Release(ctx); !isNotHeld(err) {
		t.Errorf("the old holder's Release = %v, want ErrLockNotHeld", err)
	}
	// No release was announced: the retry timer let the waiter in.
	if s := b.Stats(); s.WakeupsTimer == 0 || s.Notifications != 0 {
		t.Errorf("Stats = %+v, want a wake-up by timer and no notification", s)
	}
}

func TestLocker_Obtain_lostNotification(t *testing.T) {
	rn := testcontainers.Redis(t)
	a := newLocker(t, rn, rn.Client)
	b := newLocker(t, rn, rn.NewClient(t))
	ctx := context.Background()

	holder := mustObtain(t, a, "r", 2*time.Second)
	got := make(chan error, 1)
	go func() {
		lk, err := b.Obtain(ctx, "r", time.Minute, &lock.ObtainOptions{WaitTimeout: time.Minute})
		if err == nil {
			err = lk.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, "the waiter to sleep", func() bool {
		return lock.Sleeps(b) >= 1 && b.Stats().Subscriptions == 1
	})
	// The lock disappears without an announcement, as if the message was
	// lost: the waiter must still get through, by its timer.
	if err := rn.Client.Del(ctx, lockKey(rn.Namespace, "r")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.WakeupsTimer == 0 || s.WakeupsNotified != 0 {
		t.Errorf("Stats = %+v, want wake-ups by timer only", s)
	}
	_ = holder
}

func TestLocker_Obtain_wakesOneWaiterPerRelease(t *testing.T) {
	rn := testcontainers.Redis(t)
	a := newLocker(t, rn, rn.Client)
	b := newLocker(t, rn, rn.NewClient(t))
	ctx := context.Background()
	if err := b.Listen(ctx); err != nil {
		t.Fatal(err)
	}

	const waiters = 8
	held := mustObtain(t, a, "r", 5*time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fences []int64
	for range waiters {
		wg.Go(func() {
			lk, err := b.Obtain(ctx, "r", 5*time.Minute, &lock.ObtainOptions{WaitTimeout: 2 * time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			fences = append(fences, lk.Fence())
			mu.Unlock()
			if err := lk.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, "the waiters to sleep", func() bool { return lock.Sleeps(b) >= waiters })
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(fences) != waiters {
		t.Fatalf("%d waiters obtained the lock, want %d", len(fences), waiters)
	}
	// waiters+1 releases: each wakes one waiter, not all of them (that
	// would be 8+7+...+1 = 36 wake-ups).
	s := b.Stats()
	if s.WakeupsNotified > waiters || s.WakeupsTimer != 0 {
		t.Errorf("Stats = %+v, want at most %d wake-ups, all by notification", s, waiters)
	}
	t.Logf("stats: %+v", s)
}

func TestLocker_Obtain_resubscribeWakesWaiters(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	newClient := func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	a := mustNew(t, newClient(), nil)
	defer a.Close()
	b := mustNew(t, newClient(), nil)
	defer b.Close()
	ctx := context.Background()

	mustObtain(t, a, "r", 10*time.Minute)
	got := make(chan error, 1)
	go func() {
		lk, err := b.Obtain(ctx, "r", time.Minute, &lock.ObtainOptions{WaitTimeout: 5 * time.Minute})
		if err == nil {
			err = lk.Release(ctx)
		}
		got <- err
	}()
	waitFor(t, "the waiter to sleep", func() bool {
		return lock.Sleeps(b) >= 1 && b.Stats().Subscriptions == 1
	})
	// The server restarts empty: the lock is gone, and no release was
	// announced. The waiter's timer is the holder's 10-minute ttl; the
	// resubscription must wake it instead.
	srv.Stop()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.Subscriptions < 2 || s.WakeupsTimer != 0 || s.WakeupsNotified == 0 {
		t.Errorf("Stats = %+v, want a resubscription that woke the waiter", s)
	}
}
