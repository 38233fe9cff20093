package lock_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// badCalls are arguments every Obtain and TryObtain must refuse with
// ErrInvalid, before anything reaches Redis.
var badCalls = []struct {
	what string
	name string
	ttl  time.Duration
}{
	{"empty name", "", time.Second},
	{"1 MB name", strings.Repeat("x", 1<<20), time.Second},
	{"name one byte too long", strings.Repeat("x", 1025), time.Second},
	{"zero ttl", "a", 0},
	{"negative ttl", "a", -time.Second},
	{"sub-millisecond ttl", "a", time.Millisecond - 1},
}

// nsKeys lists the keys of namespace ns.
func nsKeys(t *testing.T, c redis.UniversalClient, ns string) []string {
	t.Helper()
	ks, err := c.Keys(context.Background(), ns+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestLocker_badInput_invalid(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()
	obtain := map[string]func(name string, ttl time.Duration) error{
		"Obtain": func(name string, ttl time.Duration) error {
			_, err := l.Obtain(ctx, name, ttl, nil)
			return err
		},
		"TryObtain": func(name string, ttl time.Duration) error {
			_, err := l.TryObtain(ctx, name, ttl)
			return err
		},
	}
	for _, tc := range badCalls {
		for op, f := range obtain {
			err := f(tc.name, tc.ttl)
			if !errors.Is(err, lock.ErrInvalid) || errors.Is(err, lock.ErrNotObtained) {
				t.Errorf("%s, %s: %v, want ErrInvalid only", op, tc.what, err)
			}
		}
	}
	if ks := nsKeys(t, rn.Client, rn.Namespace); len(ks) != 0 {
		t.Errorf("rejected calls wrote %v", ks)
	}
	if s := l.Stats(); s != (lock.Stats{}) {
		t.Errorf("rejected calls counted: %+v", s)
	}
}

func TestLocker_badInput_hugeTTL(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()
	lk := mustObtain(t, l, "huge", time.Duration(math.MaxInt64))
	if d, err := lk.TTL(ctx); err != nil || d < 100*365*24*time.Hour {
		t.Fatalf("TTL of a lock obtained for MaxInt64 = %v, %v; want about 292 years", d, err)
	}
	if err := lk.Refresh(ctx, time.Duration(math.MaxInt64)); err != nil {
		t.Fatalf("Refresh(MaxInt64) = %v", err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLock_badInput_methods(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	lk := mustObtain(t, l, "r", time.Minute)

	for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond} {
		if err := lk.Refresh(ctx, ttl); !errors.Is(err, lock.ErrInvalid) || isNotHeld(err) {
			t.Errorf("Refresh(%v) = %v, want ErrInvalid", ttl, err)
		}
	}
	for op, err := range map[string]error{
		"Release": lk.Release(cancelled),
		"Refresh": lk.Refresh(cancelled, time.Minute),
		"TTL":     func() error { _, err := lk.TTL(cancelled); return err }(),
	} {
		if !errors.Is(err, context.Canceled) || isNotHeld(err) {
			t.Errorf("%s with a cancelled context = %v, want context.Canceled, not ErrLockNotHeld", op, err)
		}
	}
	// None of that touched the lock: still held, with its ttl.
	if d, err := lk.TTL(ctx); err != nil || d < 50*time.Second {
		t.Fatalf("TTL after the rejected calls = %v, %v; want the minute still", d, err)
	}

	// A watchdog on a cancelled context stops at once, without saying the
	// lock was lost, and leaves the lock alone.
	wctx, stop := lk.AutoRefresh(cancelled)
	<-wctx.Done()
	stop()
	if cause := context.Cause(wctx); !errors.Is(cause, context.Canceled) || isNotHeld(cause) {
		t.Errorf("AutoRefresh(cancelled) cause = %v, want context.Canceled", cause)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatalf("Release after everything = %v", err)
	}

	if _, err := l.TryObtain(cancelled, "r", time.Second); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Errorf("TryObtain(cancelled) = %v, want ErrNotObtained and context.Canceled", err)
	}
	if ks := nsKeys(t, rn.Client, rn.Namespace); len(ks) != 1 || !strings.HasSuffix(ks[0], ":fence") {
		t.Errorf("keys left = %v, want only the fence counter", ks)
	}
}

func TestLocker_badInput_deadRedis(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer client.Close()
	l := mustNew(t, client, nil)
	defer l.Close()
	ctx := context.Background()
	held := mustObtain(t, l, "held", time.Minute)
	srv.Stop()

	isRedisErr := func(err error) bool {
		return err != nil && !errors.Is(err, lock.ErrNotObtained) && !errors.Is(err, lock.ErrInvalid) &&
			!isNotHeld(err) && !errors.Is(err, lock.ErrClosed)
	}
	for op, err := range map[string]error{
		"TryObtain": func() error { _, err := l.TryObtain(ctx, "r", time.Second); return err }(),
		"Obtain":    func() error { _, err := l.Obtain(ctx, "r", time.Second, nil); return err }(),
		"Release":   held.Release(ctx),
		"Refresh":   held.Refresh(ctx, time.Minute),
		"TTL":       func() error { _, err := held.TTL(ctx); return err }(),
	} {
		if !isRedisErr(err) {
			t.Errorf("%s on a stopped server = %v, want the connection error", op, err)
		}
	}
	if s := l.Stats(); s.Errors != 2 || s.NotObtained != 0 {
		t.Errorf("Stats = %+v, want 2 errors, nothing counted as not obtained", s)
	}
	lctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := l.Listen(lctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Listen on a stopped server = %v, want its context's deadline", err)
	}
	// A waiting Obtain whose Redis dies is bounded by its context: it
	// sleeps for the holder's ttl (a restart is ridden out, see
	// TestLocker_Obtain_resubscribeWakesWaiters), not past ctx.
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	mustObtain(t, l, "w", 10*time.Minute)
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	errc := make(chan error, 1)
	go func() {
		_, err := l.Obtain(wctx, "w", time.Minute, &lock.ObtainOptions{WaitTimeout: -1})
		errc <- err
	}()
	waitFor(t, "the waiter to sleep", func() bool { return lock.Sleeps(l) > 0 })
	srv.Stop()
	select {
	case err := <-errc:
		if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("waiting Obtain when the server stopped = %v, want its context's deadline", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("waiting Obtain outlives its context after its Redis stopped")
	}
}

func TestRedlock_badInput_invalid(t *testing.T) {
	ctx := context.Background()
	_, clients := redlockNodes(t, 3)
	rl := mustRedlock(t, clients, nil)
	calls := append(badCalls[:len(badCalls):len(badCalls)], []struct {
		what string
		name string
		ttl  time.Duration
	}{
		// The drift allowance is ttl/100 + 2ms: these could never be valid.
		{"ttl of 1ms", "a", time.Millisecond},
		{"ttl of 2ms", "a", 2 * time.Millisecond},
	}...)
	for _, tc := range calls {
		if _, err := rl.TryObtain(ctx, tc.name, tc.ttl); !errors.Is(err, lock.ErrInvalid) || errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("TryObtain, %s: %v, want ErrInvalid only", tc.what, err)
		}
		if _, err := rl.Obtain(ctx, tc.name, tc.ttl, nil); !errors.Is(err, lock.ErrInvalid) || errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("Obtain, %s: %v, want ErrInvalid only", tc.what, err)
		}
	}
	for i, c := range clients {
		if n := c.DBSize(ctx).Val(); n != 0 {
			t.Errorf("node %d: rejected calls left %d keys", i, n)
		}
	}
	// Refresh to a ttl the drift uses up is refused before any node is
	// touched: the lock keeps its ttl.
	lk := mustObtain(t, rl, "r", time.Minute)
	if err := lk.Refresh(ctx, 2*time.Millisecond); !errors.Is(err, lock.ErrInvalid) || isNotHeld(err) {
		t.Errorf("Refresh(2ms) = %v, want ErrInvalid", err)
	}
	if d, err := lk.TTL(ctx); err != nil || d < 50*time.Second {
		t.Fatalf("TTL after the refused Refresh = %v, %v; want the minute still", d, err)
	}
	// The smallest ttl a Redlock takes is a few milliseconds above the drift.
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedlock_badInput_contextAndDeadNodes(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	servers, clients := redlockNodes(t, 3)
	rl := mustRedlock(t, clients, nil)

	for op, err := range map[string]error{
		"TryObtain": func() error { _, err := rl.TryObtain(cancelled, "r", time.Second); return err }(),
		"Obtain":    func() error { _, err := rl.Obtain(cancelled, "r", time.Second, nil); return err }(),
	} {
		if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNoQuorum) {
			t.Errorf("%s(cancelled) = %v, want ErrNotObtained and context.Canceled", op, err)
		}
	}
	lk := mustObtain(t, rl, "r", time.Minute)
	if err := lk.Release(cancelled); !errors.Is(err, context.Canceled) || isNotHeld(err) {
		t.Errorf("Release(cancelled) = %v, want context.Canceled, not ErrLockNotHeld", err)
	}
	if _, err := lk.TTL(ctx); err != nil {
		t.Fatalf("the lock was lost by a cancelled Release: %v", err)
	}

	for _, s := range servers {
		s.Stop()
	}
	for op, err := range map[string]error{
		"TryObtain": func() error { _, err := rl.TryObtain(ctx, "x", time.Second); return err }(),
		"Obtain":    func() error { _, err := rl.Obtain(ctx, "x", time.Second, nil); return err }(),
	} {
		if !errors.Is(err, lock.ErrNoQuorum) {
			t.Errorf("%s with every node down = %v, want ErrNoQuorum", op, err)
		}
	}
	for op, err := range map[string]error{
		"Release": lk.Release(ctx),
		"Refresh": lk.Refresh(ctx, time.Minute),
		"TTL":     func() error { _, err := lk.TTL(ctx); return err }(),
	} {
		if err == nil || isNotHeld(err) {
			t.Errorf("%s with every node down = %v, want the nodes' failures, not ErrLockNotHeld", op, err)
		}
	}
}
