package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// newLocker returns a Locker on client in the test's namespace, closed at
// cleanup.
func newLocker(t testing.TB, rn *testcontainers.RedisNamespace, client redis.UniversalClient) *lock.Locker {
	t.Helper()
	l := mustNew(t, client, &lock.Options{Namespace: rn.Namespace})
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// mustNew returns lock.New(client, opts) or fails the test.
func mustNew(t testing.TB, client redis.UniversalClient, opts *lock.Options) *lock.Locker {
	t.Helper()
	l, err := lock.New(client, opts)
	if err != nil {
		t.Fatalf("lock.New: %v", err)
	}
	return l
}

// mustRedlock returns lock.NewRedlock(clients, opts) or fails the test.
func mustRedlock(t testing.TB, clients []redis.UniversalClient, opts *lock.RedlockOptions) *lock.Redlock {
	t.Helper()
	r, err := lock.NewRedlock(clients, opts)
	if err != nil {
		t.Fatalf("lock.NewRedlock: %v", err)
	}
	return r
}

// mustObtain obtains name with TryObtain or fails the test.
func mustObtain(t testing.TB, o lock.Obtainer, name string, ttl time.Duration) *lock.Lock {
	t.Helper()
	lk, err := o.TryObtain(context.Background(), name, ttl)
	if err != nil {
		t.Fatalf("TryObtain(%q): %v", name, err)
	}
	return lk
}

// waitFor polls cond until it holds, failing the test after a generous
// bound: a loaded machine may be slow, but not by a minute.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lockKey is the Redis key of lock name in namespace ns (escaped names
// only).
func lockKey(ns, name string) string { return ns + ":lock:{" + name + "}" }

func isNotHeld(err error) bool { return errors.Is(err, lock.ErrLockNotHeld) }
