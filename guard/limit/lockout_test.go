package limit

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// untilAllowed calls Allow on key every 10 ms until it is allowed, for at
// most 10 s, and returns the calls.
func untilAllowed(t *testing.T, lim Limiter, key string) []call {
	t.Helper()
	var calls []call
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := lim.Allow(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, call{at: res.at, res: res})
		if res.Allowed {
			return calls
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: still refused after 10 s", key)
	return nil
}

func TestFixedWindow_lockout(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		window, lock time.Duration
	}{
		{"lock outlasts the window", 200 * ms, 700 * ms},
		{"lock ends the window early", 5 * time.Second, 400 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			lim, err := NewFixedWindow(r.Client, FixedWindow{Limit: n, Window: tc.window, LockTime: tc.lock}, &Options{Namespace: r.Namespace})
			if err != nil {
				t.Fatal(err)
			}
			key := "login:" + tc.name
			var calls []call
			for range 2 {
				for i := range n {
					res, err := lim.Allow(ctx, key)
					if err != nil || !res.Allowed {
						t.Fatalf("call %d of %d = %+v, %v; want allowed", i+1, n, res, err)
					}
					calls = append(calls, call{at: res.at, res: res})
				}
				// The (n+1)-th call is refused and locks the key ...
				res, err := lim.Allow(ctx, key)
				if err != nil || res.Allowed || res.RetryAfter != tc.lock+time.Millisecond {
					t.Fatalf("call %d = %+v, %v; want refused, RetryAfter %v (+1 ms)", n+1, res, err, tc.lock)
				}
				lockedAt := res.at
				calls = append(calls, call{at: res.at, res: res})
				// ... every call is refused until the lock has passed, and
				// then allowed again.
				more := untilAllowed(t, lim, key)
				calls = append(calls, more...)
				if refused := len(more) - 1; refused < 5 {
					t.Fatalf("only %d calls during the lock; the test is too slow to prove it", refused)
				}
				if back := more[len(more)-1].at - lockedAt; back < (tc.lock-tc.lock/8).Microseconds() || back > tc.lock.Microseconds()+time.Second.Microseconds() {
					t.Fatalf("allowed again %v after the lock of %v began", time.Duration(back)*time.Microsecond, tc.lock)
				}
				// The first call after the lock opened a new window.
				if got := calls[len(calls)-1].res.Remaining; got != n-1 {
					t.Fatalf("the first call after the lock has Remaining %d, want %d", got, n-1)
				}
				if err := lim.Reset(ctx, key); err != nil {
					t.Fatal(err)
				}
				calls = calls[:0]
			}
		})
	}
}

func TestFixedWindow_lockoutExact(t *testing.T) {
	r := testcontainers.Redis(t)
	const lock = 400 * ms
	calls := hammer(t, r, func(c Client) (Limiter, error) {
		return NewFixedWindow(c, FixedWindow{Limit: hammerLimit, Window: hammerWindow, LockTime: lock}, hammerOptions(r.Namespace))
	}, "fwl:hot", hammerInstances, hammerGoroutines, runFor)
	locks, err := checkLockout(calls, hammerLimit, hammerWindow, lock, hammerWindow/4)
	if err != nil {
		t.Fatal(err)
	}
	if locks < 4 {
		t.Fatalf("%d locks, want at least 4", locks)
	}
	t.Logf("%d locks", locks)
}
