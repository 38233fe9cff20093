package limit

import (
	"testing"
	"time"
)

// The checkers must catch what they are there to catch: each one is fed a
// hand-made history that keeps the definition and some that break it.

func mk(at int64, allowed bool, retry, reset time.Duration) call {
	return call{at: at, res: Result{Allowed: allowed, RetryAfter: retry, ResetAfter: reset, at: at}}
}

const ms = time.Millisecond

func TestCheckFixedWindow_catchesViolations(t *testing.T) {
	const n, w = 2, 100 * ms
	good := []call{
		mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(3000, false, 98*ms, 98*ms),
		mk(101500, true, 0, 101*ms), mk(102000, true, 0, 100*ms-500), mk(150000, false, 0, 0),
		mk(202000, true, 0, 101*ms),
	}
	wins, err := checkFixedWindow(good, n, w, 3*ms)
	if err != nil || len(wins) != 2 {
		t.Fatalf("a good history: %d complete windows, %v; want 2, nil", len(wins), err)
	}
	for name, calls := range map[string][]call{
		"too many in a window": {mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(3000, true, 0, 98*ms)},
		"refused too early":    {mk(1000, true, 0, 101*ms), mk(2000, false, 99*ms, 99*ms)},
		"refused between":      {mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(150000, false, 0, 0)},
		"window restarted":     {mk(1000, true, 0, 101*ms), mk(50000, true, 0, 101*ms)},
		"window too short":     {mk(1000, true, 0, 50*ms), mk(2000, true, 0, 49*ms)},
		"refused, not full":    {mk(1000, true, 0, 101*ms), mk(101500, true, 0, 101*ms), mk(101600, false, 0, 0), mk(250000, true, 0, 101*ms)},
	} {
		if _, err := checkFixedWindow(calls, n, w, 3*ms); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}

func TestCheckSlidingLog_catchesViolations(t *testing.T) {
	const n, w = 2, 100 * ms
	good := []call{
		mk(1000, true, 0, 0), mk(2000, true, 0, 0), mk(3000, false, 98*ms, 0),
		mk(101000, true, 0, 0), mk(101500, false, 500*time.Microsecond, 0),
	}
	if allowed, err := checkSlidingLog(good, n, w); err != nil || allowed != 3 {
		t.Fatalf("a good history: %d allowed, %v; want 3, nil", allowed, err)
	}
	for name, calls := range map[string][]call{
		"too many in a window": {mk(1000, true, 0, 0), mk(2000, true, 0, 0), mk(100500, true, 0, 0)},
		"refused with room":    {mk(1000, true, 0, 0), mk(2000, false, 99*ms, 0)},
		"wrong RetryAfter":     {mk(1000, true, 0, 0), mk(2000, true, 0, 0), mk(3000, false, 97*ms, 0)},
	} {
		if _, err := checkSlidingLog(calls, n, w); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}

func TestCheckBucket_catchesViolations(t *testing.T) {
	const burst, perToken = 2, 1000.0 // µs per token
	good := []call{
		mk(10, true, 0, 0), mk(10, true, 0, 0), mk(20, false, 990*time.Microsecond, 0),
		mk(1010, true, 0, 0), mk(1500, false, 510*time.Microsecond, 0),
		mk(9000, true, 0, 0), // idle long enough to fill the bucket: a new line
	}
	if allowed, lines, err := checkBucket(good, burst, perToken); err != nil || allowed != 4 || lines != 2 {
		t.Fatalf("a good history: %d allowed, %d lines, %v; want 4, 2, nil", allowed, lines, err)
	}
	for name, calls := range map[string][]call{
		"beyond the burst":  {mk(10, true, 0, 0), mk(10, true, 0, 0), mk(10, true, 0, 0)},
		"beyond the rate":   {mk(10, true, 0, 0), mk(10, true, 0, 0), mk(900, true, 0, 0)},
		"refused with room": {mk(10, true, 0, 0), mk(20, false, 0, 0)},
		"lagging the rate":  {mk(10, true, 0, 0), mk(10, true, 0, 0), mk(1200, false, 0, 0)},
		"wrong RetryAfter":  {mk(10, true, 0, 0), mk(10, true, 0, 0), mk(20, false, 500*time.Microsecond, 0)},
	} {
		if _, _, err := checkBucket(calls, burst, perToken); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}

func TestCheckSlidingWindow_catchesViolations(t *testing.T) {
	const n, w = 2, 100 * ms
	base := int64(1_000_000_000) * 1000 // µs, the start of an aligned window
	good := []call{
		// Full: the next call fits 50 ms into the next window, where the
		// previous one weighs 2 × 0.5 = 1.
		mk(base+1000, true, 0, 0), mk(base+2000, true, 0, 0), mk(base+3000, false, 147*ms, 0),
		// Full again until the next window, where 1 × 1 = 1.
		mk(base+150_000, true, 0, 0), mk(base+150_500, false, 49500*time.Microsecond, 0),
	}
	if wins, err := checkSlidingWindow(good, n, w); err != nil || wins != 2 {
		t.Fatalf("a good history: %d windows, %v; want 2, nil", wins, err)
	}
	for name, calls := range map[string][]call{
		"too many":          {mk(base+1000, true, 0, 0), mk(base+2000, true, 0, 0), mk(base+3000, true, 0, 0)},
		"refused with room": {mk(base+1000, true, 0, 0), mk(base+2000, false, 0, 0)},
		"RetryAfter late":   {mk(base+1000, true, 0, 0), mk(base+2000, true, 0, 0), mk(base+3000, false, 148*ms, 0)},
		"RetryAfter early":  {mk(base+1000, true, 0, 0), mk(base+2000, true, 0, 0), mk(base+3000, false, 146*ms, 0)},
		"previous ignored":  {mk(base+1000, true, 0, 0), mk(base+2000, true, 0, 0), mk(base+110_000, true, 0, 0), mk(base+111_000, true, 0, 0)},
	} {
		if _, err := checkSlidingWindow(calls, n, w); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}

func TestCheckLockout_catchesViolations(t *testing.T) {
	const n, w, lock = 2, 100 * ms, 300 * ms
	good := []call{
		mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(3000, false, 301*ms, 301*ms),
		mk(200000, false, 103*ms, 103*ms), // the window is over, the lock is not
		mk(304000, true, 0, 101*ms), mk(305000, true, 0, 99*ms), mk(306000, false, 301*ms, 301*ms),
	}
	if locks, err := checkLockout(good, n, w, lock, 3*ms); err != nil || locks != 2 {
		t.Fatalf("a good history: %d locks, %v; want 2, nil", locks, err)
	}
	for name, calls := range map[string][]call{
		"allowed in the lock":  {mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(3000, false, 301*ms, 301*ms), mk(200000, true, 0, 101*ms)},
		"refused after it":     {mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(3000, false, 301*ms, 301*ms), mk(340000, false, 0, 0)},
		"no lock":              {mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(3000, false, 98*ms, 98*ms)},
		"too many":             {mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(3000, true, 0, 98*ms)},
		"refused too early":    {mk(1000, true, 0, 101*ms), mk(2000, false, 301*ms, 301*ms)},
		"refused after window": {mk(1000, true, 0, 101*ms), mk(2000, true, 0, 99*ms), mk(150000, false, 301*ms, 301*ms)},
	} {
		if _, err := checkLockout(calls, n, w, lock, 3*ms); err == nil {
			t.Errorf("%s: not caught", name)
		}
	}
}
