package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestLocker_ObtainRelease(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	lk, err := l.Obtain(ctx, "order:42", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lk.Key() != "order:42" {
		t.Errorf("Key() = %q", lk.Key())
	}
	if len(lk.Token()) != 22 {
		t.Errorf("Token() = %q, want 22 base64 characters (128 bits)", lk.Token())
	}
	key := lockKey(rn.Namespace, "order%3A42")
	if got, err := rn.Client.Get(ctx, key).Result(); err != nil || got != lk.Token() {
		t.Fatalf("GET %s = %q, %v; want the token %q", key, got, err, lk.Token())
	}
	ttl, err := lk.TTL(ctx)
	if err != nil || ttl <= 50*time.Second || ttl > time.Minute {
		t.Errorf("TTL() = %v, %v; want about a minute", ttl, err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rn.Client.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("lock key still exists after Release")
	}
	if err := lk.Release(ctx); !isNotHeld(err) {
		t.Errorf("second Release = %v, want ErrLockNotHeld", err)
	}
	if _, err := lk.TTL(ctx); !isNotHeld(err) {
		t.Errorf("TTL after Release = %v, want ErrLockNotHeld", err)
	}

	again, err := l.TryObtain(ctx, "order:42", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Release(ctx)
	if lk.Fence() != 1 || again.Fence() != 2 {
		t.Errorf("fences = %d, %d; want 1, 2", lk.Fence(), again.Fence())
	}
	if again.Token() == lk.Token() {
		t.Error("two acquisitions share a token")
	}
	if s := l.Stats(); s.Obtained != 2 || s.Waits != 0 {
		t.Errorf("Stats = %+v, want 2 obtained, no waits", s)
	}
}

func TestLocker_TryObtain_held(t *testing.T) {
	rn := testcontainers.Redis(t)
	a := newLocker(t, rn, rn.Client)
	b := newLocker(t, rn, rn.NewClient(t))
	ctx := context.Background()

	held := mustObtain(t, a, "res", time.Minute)
	if _, err := b.TryObtain(ctx, "res", time.Minute); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("TryObtain of a held lock = %v, want ErrNotObtained", err)
	}
	if s := b.Stats(); s.NotObtained != 1 || s.Obtained != 0 {
		t.Errorf("Stats = %+v", s)
	}
	// Other names are independent.
	other := mustObtain(t, b, "res2", time.Minute)
	_ = other.Release(ctx)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	mustObtain(t, b, "res", time.Minute).Release(ctx)
}

func TestLock_Release_notOwner(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	old := mustObtain(t, l, "r", 50*time.Millisecond)
	waitFor(t, "the lock to expire", func() bool { return rn.Client.Exists(ctx, lockKey(rn.Namespace, "r")).Val() == 0 })

	// After expiry, with no new holder: not held, and the fence counter
	// stays.
	if err := old.Release(ctx); !isNotHeld(err) {
		t.Fatalf("Release after expiry = %v, want ErrLockNotHeld", err)
	}
	if n := rn.Client.Exists(ctx, lockKey(rn.Namespace, "r")+":fence").Val(); n != 1 {
		t.Fatal("Release after expiry deleted the fence counter")
	}

	// After expiry, with a new holder: the old holder is not the owner and
	// deletes nothing.
	cur := mustObtain(t, l, "r", time.Minute)
	if err := old.Release(ctx); !isNotHeld(err) {
		t.Fatalf("Release by a non-owner = %v, want ErrLockNotHeld", err)
	}
	if got := rn.Client.Get(ctx, lockKey(rn.Namespace, "r")).Val(); got != cur.Token() {
		t.Fatalf("lock value after a non-owner's Release = %q, want the owner's token", got)
	}
	if err := old.Refresh(ctx, time.Hour); !isNotHeld(err) {
		t.Errorf("Refresh by a non-owner = %v, want ErrLockNotHeld", err)
	}
	if ttl, err := cur.TTL(ctx); err != nil || ttl > time.Minute {
		t.Errorf("owner's TTL after a non-owner's Refresh = %v, %v", ttl, err)
	}
	if cur.Fence() <= old.Fence() {
		t.Errorf("fences %d then %d do not increase", old.Fence(), cur.Fence())
	}
	if err := cur.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLock_Refresh(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	lk := mustObtain(t, l, "r", time.Second)
	if err := lk.Refresh(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if ttl, err := lk.TTL(ctx); err != nil || ttl < 59*time.Minute {
		t.Fatalf("TTL after Refresh(1h) = %v, %v", ttl, err)
	}
	if err := lk.Refresh(ctx, 0); err == nil {
		t.Error("Refresh(0) succeeded")
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lk.Refresh(ctx, time.Hour); !isNotHeld(err) {
		t.Errorf("Refresh after Release = %v, want ErrLockNotHeld", err)
	}
	if n := rn.Client.Exists(ctx, lockKey(rn.Namespace, "r")).Val(); n != 0 {
		t.Error("Refresh after Release recreated the key")
	}
}

func TestLocker_badInput(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	for _, tc := range []struct {
		what string
		name string
		ttl  time.Duration
		want string
	}{
		{"empty name", "", time.Second, "empty"},
		{"huge name", strings.Repeat("x", 2000), time.Second, "limit"},
		{"zero ttl", "a", 0, "ttl"},
		{"sub-millisecond ttl", "a", 500 * time.Microsecond, "ttl"},
	} {
		_, err := l.Obtain(ctx, tc.name, tc.ttl, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("%s: Obtain = %v, want an error about %q", tc.what, err, tc.want)
		}
		if _, err := l.TryObtain(ctx, tc.name, tc.ttl); err == nil {
			t.Errorf("%s: TryObtain succeeded", tc.what)
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := l.Obtain(cancelled, "a", time.Second, nil)
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Errorf("Obtain with a cancelled context = %v", err)
	}
}

func TestLocker_keyLayout_escapesName(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	lk := mustObtain(t, l, "a}{b c", time.Minute)
	defer lk.Release(ctx)
	want := rn.Namespace + ":lock:{a%7D%7Bb%20c}"
	if got := rn.Client.Get(ctx, want).Val(); got != lk.Token() {
		t.Fatalf("GET %s = %q, want the token", want, got)
	}
	if got := rn.Client.Get(ctx, want+":fence").Val(); got != "1" {
		t.Fatalf("GET %s:fence = %q, want 1", want, got)
	}
}

func TestLocker_keyLayout_cluster(t *testing.T) {
	rn := testcontainers.RedisCluster(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()

	for _, name := range []string{"a", "b", "user:42", "z{y}"} {
		lk := mustObtain(t, l, name, time.Minute)
		if err := lk.Refresh(ctx, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, err := lk.TTL(ctx); err != nil {
			t.Fatal(err)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
		again := mustObtain(t, l, name, time.Minute)
		if again.Fence() != 2 {
			t.Errorf("%q: second fence = %d, want 2", name, again.Fence())
		}
		_ = again.Release(ctx)
	}
}

func TestLocker_deadRedis(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
	defer client.Close()
	l := mustNew(t, client, nil)
	defer l.Close()
	ctx := context.Background()

	held := mustObtain(t, l, "r", time.Minute)
	srv.Stop()
	_, err := l.Obtain(ctx, "r2", time.Second, nil)
	if err == nil || errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain on a stopped server = %v, want a connection error", err)
	}
	if !strings.Contains(err.Error(), `obtain "r2"`) {
		t.Errorf("error %q does not name the lock", err)
	}
	if err := held.Release(ctx); err == nil || isNotHeld(err) {
		t.Errorf("Release on a stopped server = %v, want a connection error", err)
	}
	if s := l.Stats(); s.Errors != 1 {
		t.Errorf("Stats.Errors = %d, want 1", s.Errors)
	}
}

func TestLocker_Obtain_waitBound(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := newLocker(t, rn, rn.Client)
	ctx := context.Background()
	held := mustObtain(t, l, "r", time.Minute)
	defer held.Release(ctx)

	_, err := l.Obtain(ctx, "r", time.Minute, &lock.ObtainOptions{WaitTimeout: 100 * time.Millisecond})
	if !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain past its wait bound = %v, want ErrNotObtained", err)
	}

	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = l.Obtain(dctx, "r", time.Minute, &lock.ObtainOptions{WaitTimeout: -1})
	if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Obtain past its context's deadline = %v, want ErrNotObtained and DeadlineExceeded", err)
	}
	if s := l.Stats(); s.NotObtained != 2 || s.Waits != 2 {
		t.Errorf("Stats = %+v, want 2 waits, 2 not obtained", s)
	}
}

func TestLocker_Close(t *testing.T) {
	rn := testcontainers.Redis(t)
	l := mustNew(t, rn.Client, &lock.Options{Namespace: rn.Namespace})
	ctx := context.Background()
	held := mustObtain(t, l, "r", time.Minute)

	errc := make(chan error, 1)
	go func() {
		_, err := l.Obtain(ctx, "r", time.Minute, nil)
		errc <- err
	}()
	waitFor(t, "the waiter", func() bool { return l.Stats().Waits == 1 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("waiting Obtain after Close = %v, want ErrClosed", err)
	}
	if _, err := l.TryObtain(ctx, "x", time.Minute); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("TryObtain after Close = %v, want ErrClosed", err)
	}
	if err := l.Listen(ctx); !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Listen after Close = %v, want ErrClosed", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("Release after Close = %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}
