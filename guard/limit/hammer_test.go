package limit

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// call is one Allow made by hammer, as the test saw it.
type call struct {
	at  int64 // Redis time of the decision, µs since the epoch
	res Result
}

// hammer makes instances limiters, each on its own client (as separate
// processes would), and runs perInstance goroutines on each that call Allow
// on key until d of Redis time has passed since the first decision. It returns every call in the order Redis decided them.
func hammer(t *testing.T, r *testcontainers.RedisNamespace, build func(Client) (Limiter, error), key string, instances, perInstance int, d time.Duration) []call {
	t.Helper()
	ctx := context.Background()
	var (
		mu    sync.Mutex
		calls []call
		errs  []error
		wg    sync.WaitGroup
	)
	// The run lasts d of Redis time from the first decision, however long
	// the clients take to connect.
	var first atomic.Int64
	for range instances {
		lim, err := build(r.NewClient(t))
		if err != nil {
			t.Fatal(err)
		}
		for range perInstance {
			wg.Go(func() {
				var mine []call
				var err error
				for {
					var res Result
					res, err = lim.Allow(ctx, key)
					if err != nil {
						break
					}
					mine = append(mine, call{at: res.at, res: res})
					first.CompareAndSwap(0, res.at)
					if res.at-first.Load() >= d.Microseconds() {
						break
					}
				}
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, mine...)
				if err != nil {
					errs = append(errs, err)
				}
			})
		}
	}
	wg.Wait()
	for _, err := range errs {
		t.Errorf("Allow: %v", err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	// Redis runs scripts one at a time, so the order of their TIME readings
	// is the order of the decisions. Among calls that read the same
	// microsecond, put the allowed ones first: if the limiter is right, that
	// is an order in which it could have decided them.
	slices.SortStableFunc(calls, func(a, b call) int {
		switch {
		case a.at != b.at:
			return cmp.Compare(a.at, b.at)
		case a.res.Allowed == b.res.Allowed:
			return 0
		case a.res.Allowed:
			return -1
		}
		return 1
	})
	for _, c := range calls {
		if c.at == 0 {
			t.Fatalf("a call has no Redis time: %+v", c)
		}
	}
	t.Logf("%d calls, %d allowed, over %v of Redis time", len(calls), countAllowed(calls), time.Duration(calls[len(calls)-1].at-calls[0].at)*time.Microsecond)
	return calls
}

func countAllowed(calls []call) int {
	n := 0
	for _, c := range calls {
		if c.res.Allowed {
			n++
		}
	}
	return n
}

// Sizes of the exactness tests: 3 limiter instances, each with its own
// client, × 50 goroutines.
const (
	hammerInstances  = 3
	hammerGoroutines = 50
	hammerWindow     = 200 * time.Millisecond
	hammerLimit      = 20
	hammerWindows    = 5
	hammerRunsHalves = 15 // run for 7.5 windows, well over hammerWindows
)

// hammerOptions are the Options of the limiters the exactness tests
// saturate: 150 goroutines share three clients' pools of connections, so on
// a loaded machine a healthy call can queue for a connection past any
// sensible per-call deadline, and a call that timed out may have been
// counted by Redis without the test seeing it. These tests measure the
// scripts, not the fault handling (breaker_test.go does), so their calls
// are bounded by the client's own timeouts only.
func hammerOptions(ns string) *Options { return &Options{Namespace: ns, Timeout: -1} }
