package limit

import (
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// backends runs f on a standalone Redis and, if cluster is true, on Redis
// Cluster.
func backends(t *testing.T, cluster bool, f func(t *testing.T, r *testcontainers.RedisNamespace)) {
	t.Run("standalone", func(t *testing.T) { f(t, testcontainers.Redis(t)) })
	if cluster {
		t.Run("cluster", func(t *testing.T) { f(t, testcontainers.RedisCluster(t)) })
	}
}

const runFor = hammerRunsHalves * hammerWindow / 2

func TestFixedWindow_exact(t *testing.T) {
	backends(t, true, func(t *testing.T, r *testcontainers.RedisNamespace) {
		calls := hammer(t, r, func(c Client) (Limiter, error) {
			return NewFixedWindow(c, FixedWindow{Limit: hammerLimit, Window: hammerWindow}, hammerOptions(r.Namespace))
		}, "fw:hot", hammerInstances, hammerGoroutines, runFor)
		wins, err := checkFixedWindow(calls, hammerLimit, hammerWindow, hammerWindow/4)
		if err != nil {
			t.Fatal(err)
		}
		if len(wins) < hammerWindows {
			t.Fatalf("%d complete windows with exactly %d calls, want at least %d", len(wins), hammerLimit, hammerWindows)
		}
		t.Logf("%d complete windows, each exactly %d allowed", len(wins), hammerLimit)
	})
}

func TestSlidingLog_exact(t *testing.T) {
	backends(t, true, func(t *testing.T, r *testcontainers.RedisNamespace) {
		calls := hammer(t, r, func(c Client) (Limiter, error) {
			return NewSlidingLog(c, SlidingLog{Limit: hammerLimit, Window: hammerWindow}, hammerOptions(r.Namespace))
		}, "sl:hot", hammerInstances, hammerGoroutines, runFor)
		allowed, err := checkSlidingLog(calls, hammerLimit, hammerWindow)
		if err != nil {
			t.Fatal(err)
		}
		// Saturated, the log lets n calls through per window.
		if allowed < hammerWindows*hammerLimit {
			t.Fatalf("%d calls allowed, want at least %d over %d windows", allowed, hammerWindows*hammerLimit, hammerWindows)
		}
	})
}

func TestSlidingWindow_exact(t *testing.T) {
	backends(t, false, func(t *testing.T, r *testcontainers.RedisNamespace) {
		calls := hammer(t, r, func(c Client) (Limiter, error) {
			return NewSlidingWindow(c, SlidingWindow{Limit: hammerLimit, Window: hammerWindow}, hammerOptions(r.Namespace))
		}, "sw:hot", hammerInstances, hammerGoroutines, runFor)
		wins, err := checkSlidingWindow(calls, hammerLimit, hammerWindow)
		if err != nil {
			t.Fatal(err)
		}
		if wins < hammerWindows {
			t.Fatalf("calls allowed in %d aligned windows, want at least %d", wins, hammerWindows)
		}
	})
}

// The bucket algorithms: a burst of 10, then one call per 20 ms (10 per
// 200 ms "window"), hammered across 7.5 such windows.
const (
	bucketBurst  = 10
	bucketPeriod = 200 * time.Millisecond
)

func TestGCRA_exact(t *testing.T) {
	backends(t, true, func(t *testing.T, r *testcontainers.RedisNamespace) {
		calls := hammer(t, r, func(c Client) (Limiter, error) {
			return NewGCRA(c, GCRA{Rate: Rate{Limit: bucketBurst, Period: bucketPeriod}, Burst: bucketBurst}, hammerOptions(r.Namespace))
		}, "gcra:hot", hammerInstances, hammerGoroutines, hammerRunsHalves*bucketPeriod/2)
		checkBucketRun(t, calls)
	})
}

func TestFunnel_exact(t *testing.T) {
	backends(t, true, func(t *testing.T, r *testcontainers.RedisNamespace) {
		calls := hammer(t, r, func(c Client) (Limiter, error) {
			return NewFunnel(c, Funnel{Capacity: bucketBurst, Leak: Rate{Limit: bucketBurst, Period: bucketPeriod}}, hammerOptions(r.Namespace))
		}, "funnel:hot", hammerInstances, hammerGoroutines, hammerRunsHalves*bucketPeriod/2)
		checkBucketRun(t, calls)
	})
}

func checkBucketRun(t *testing.T, calls []call) {
	t.Helper()
	perToken := float64(bucketPeriod.Microseconds()) / bucketBurst
	// The burst: a fresh key allows exactly bucketBurst calls at once (the
	// first calls come within far less than one emission interval).
	for i, c := range calls[:bucketBurst] {
		if !c.res.Allowed {
			t.Fatalf("call %d of the burst refused", i)
		}
	}
	if c := calls[bucketBurst]; c.res.Allowed && float64(c.at-calls[0].at) < perToken {
		t.Fatalf("call %d allowed %dµs after the first, the burst is %d", bucketBurst+1, c.at-calls[0].at, bucketBurst)
	}
	allowed, lines, err := checkBucket(calls, bucketBurst, perToken)
	if err != nil {
		t.Fatal(err)
	}
	span := calls[len(calls)-1].at - calls[0].at
	if span < hammerWindows*bucketPeriod.Microseconds() {
		t.Fatalf("the calls spanned %dµs, want at least %d windows", span, hammerWindows)
	}
	t.Logf("%d allowed; the rate line started %d time(s)", allowed, lines)
}
