package limit

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// The checkers below state each algorithm's definition over the calls the
// test made, in Redis-time order, and count the allowed calls themselves;
// they never read a count back from the limiter.

// expiryGrace is what the fixed window adds to a key's PTTL in RetryAfter
// and ResetAfter: Redis keeps a key until its expiry time has passed.
const expiryGrace = time.Millisecond

// The fixed-window checkers take a tolerance, edge, at a window's (or a
// lock's) end. The scripts read TIME, in µs; Redis sets and applies expiries
// with its own cached clock, in ms, which can trail TIME by tens of ms when
// the server is starved of CPU. The number of calls per window does not
// depend on it; where a window begins and ends, seen from TIME, does.

// fixedWin is one window of a fixed-window limiter, as the test saw it.
type fixedWin struct {
	start, end int64 // µs
	allowed    int
	fullAt     int64 // Redis time of the N-th allowed call; 0 until then
}

// checkFixedWindow asserts: a window of length w starts with the first
// allowed call after the previous window ended; each window allows at most
// n calls; a call is refused only when its window has allowed n. It returns
// the complete windows (ended before the last call) that allowed exactly n.
func checkFixedWindow(calls []call, n int, w, tolerance time.Duration) ([]fixedWin, error) {
	edge := tolerance.Microseconds()
	wus := w.Microseconds()
	var wins []fixedWin
	for _, c := range calls {
		if !c.res.Allowed {
			continue
		}
		// The limiter says when the window ends; the test only uses it to
		// tell a new window from the current one, and checks it.
		end := c.at + c.res.ResetAfter.Microseconds()
		if len(wins) == 0 || end > wins[len(wins)-1].end+edge {
			if c.res.ResetAfter != w+expiryGrace {
				return nil, fmt.Errorf("the first call of a window at %d reports ResetAfter %v, want %v", c.at, c.res.ResetAfter, w+expiryGrace)
			}
			if len(wins) > 0 && c.at < wins[len(wins)-1].end-edge {
				return nil, fmt.Errorf("a window starts at %d, before the previous one ends at %d", c.at, wins[len(wins)-1].end)
			}
			wins = append(wins, fixedWin{start: c.at, end: c.at + wus})
		}
		cur := &wins[len(wins)-1]
		if end < cur.end-edge || c.at >= cur.end+edge {
			return nil, fmt.Errorf("call at %d (window ends at %d by its ResetAfter) is outside its window [%d, %d)", c.at, end, cur.start, cur.end)
		}
		cur.allowed++
		if cur.allowed > n {
			return nil, fmt.Errorf("window [%d, %d) allowed %d calls, the limit is %d", cur.start, cur.end, cur.allowed, n)
		}
		if cur.allowed == n {
			cur.fullAt = c.at
		}
	}
	for _, c := range calls {
		if c.res.Allowed {
			continue
		}
		i := sort.Search(len(wins), func(i int) bool { return wins[i].start > c.at }) - 1
		if i < 0 || c.at >= wins[i].end+edge {
			return nil, fmt.Errorf("call at %d refused outside every window", c.at)
		}
		if wins[i].fullAt == 0 || c.at < wins[i].fullAt {
			return nil, fmt.Errorf("call at %d refused in window [%d, %d) which had allowed fewer than %d calls", c.at, wins[i].start, wins[i].end, n)
		}
	}
	// A complete window that allowed fewer than n refused nothing (that is
	// checked above): too few calls came, the machine was slow. Only full
	// ones count.
	last := calls[len(calls)-1].at
	var complete []fixedWin
	for _, win := range wins {
		if win.end <= last && win.allowed == n {
			complete = append(complete, win)
		}
	}
	return complete, nil
}

// checkSlidingLog asserts: no interval (t-w, t] holds more than n allowed
// calls, and a call at t is refused only when (t-w, t] already holds n. It
// returns the number of allowed calls.
func checkSlidingLog(calls []call, n int, w time.Duration) (int, error) {
	wus := w.Microseconds()
	var allowed []int64
	for _, c := range calls {
		if c.res.Allowed {
			allowed = append(allowed, c.at)
		}
	}
	for i := 0; i+n < len(allowed); i++ {
		if allowed[i+n]-allowed[i] < wus {
			return 0, fmt.Errorf("%d calls allowed in %v (from %d to %d), the limit is %d per %v",
				n+1, time.Duration(allowed[i+n]-allowed[i])*time.Microsecond, allowed[i], allowed[i+n], n, w)
		}
	}
	for _, c := range calls {
		if c.res.Allowed {
			continue
		}
		hi := sort.Search(len(allowed), func(i int) bool { return allowed[i] > c.at })
		lo := sort.Search(len(allowed), func(i int) bool { return allowed[i] > c.at-wus })
		if hi-lo < n {
			return 0, fmt.Errorf("call at %d refused with %d calls in the window before it, the limit is %d", c.at, hi-lo, n)
		}
		// RetryAfter: when the oldest call in the window leaves it.
		if want := time.Duration(allowed[lo]+wus-c.at) * time.Microsecond; c.res.RetryAfter != want {
			return 0, fmt.Errorf("call at %d refused with RetryAfter %v, want %v", c.at, c.res.RetryAfter, want)
		}
	}
	return len(allowed), nil
}

// checkBucket asserts token-bucket behaviour (GCRA and funnel): a bucket of
// burst tokens, refilled with one token every perToken µs. While the bucket
// is never full again, the allowed calls follow the line burst + (t-t0) /
// perToken from the first call t0: at most that many, and a call is refused
// only when taking it would cross the line, so the allowed calls never lag
// the line by one emission interval or more. When the bucket fills up
// (the limiter was idle long enough) the line starts again there. RetryAfter
// of a refused call must be exactly the time until the line lets it pass. It
// returns the number of allowed calls and of times the line started.
func checkBucket(calls []call, burst int, perToken float64) (allowed, lines int, err error) {
	const eps = 1e-6 // tokens; far below one microsecond's refill
	var t0 int64
	base := 0 // allowed calls before t0
	used := func(at int64) float64 {
		return float64(allowed-base) - float64(at-t0)/perToken
	}
	for _, c := range calls {
		if lines == 0 || used(c.at) <= 0 {
			t0, base = c.at, allowed
			lines++
		}
		u := used(c.at) // tokens taken from the bucket before this call
		fits := u+1 <= float64(burst)+eps
		if c.res.Allowed {
			if !fits {
				return 0, 0, fmt.Errorf("call at %d allowed with %.6f of %d tokens used (%d allowed since %d)", c.at, u, burst, allowed-base, t0)
			}
			allowed++
			continue
		}
		if u+1 <= float64(burst)-eps {
			return 0, 0, fmt.Errorf("call at %d refused with only %.6f of %d tokens used (%d allowed since %d)", c.at, u, burst, allowed-base, t0)
		}
		want := (u + 1 - float64(burst)) * perToken
		if got := float64(c.res.RetryAfter.Microseconds()); math.Abs(got-want) > 1.5 {
			return 0, 0, fmt.Errorf("call at %d refused with RetryAfter %vµs, want %.1fµs", c.at, got, want)
		}
	}
	return allowed, lines, nil
}

// checkSlidingWindow replays the two-counter definition (windows aligned on
// the epoch; allowed iff prev × (w - elapsed)/w + cur + 1 <= n, in ms) over
// the calls, and asserts every decision and that no aligned window allowed
// more than n. It returns the number of aligned windows seen.
func checkSlidingWindow(calls []call, n int, w time.Duration) (int, error) {
	wms := w.Milliseconds()
	sw := int64(-1) // the window of the counts; -1 before the first call
	var cur, prev int64
	// fitsAt says whether one call would fit at ms if no call came between
	// the last one and ms.
	fitsAt := func(ms int64) bool {
		win, elapsed := ms/wms, ms%wms
		c, p := cur, prev
		switch {
		case sw < 0 || win > sw+1:
			c, p = 0, 0
		case win == sw+1:
			p, c = c, 0
		}
		return p*(wms-elapsed)+(c+1)*wms <= int64(n)*wms
	}
	perWindow := map[int64]int{}
	for _, c := range calls {
		ms := c.at / 1000
		fits := fitsAt(ms)
		if fits != c.res.Allowed {
			return 0, fmt.Errorf("call at %d: allowed=%v, want %v (prev %d, cur %d in window %d)", c.at, c.res.Allowed, fits, prev, cur, sw)
		}
		if !fits {
			// RetryAfter leads to the first millisecond at which the call
			// fits.
			retry := c.at + c.res.RetryAfter.Microseconds()
			if retry%1000 != 0 || !fitsAt(retry/1000) || fitsAt(retry/1000-1) && retry/1000-1 > ms {
				return 0, fmt.Errorf("call at %d refused with RetryAfter %v: not the first millisecond the call fits", c.at, c.res.RetryAfter)
			}
			continue
		}
		win := ms / wms
		switch {
		case sw < 0 || win > sw+1:
			cur, prev = 0, 0
		case win == sw+1:
			prev, cur = cur, 0
		}
		sw = win
		cur++
		perWindow[win]++
		if perWindow[win] > n {
			return 0, fmt.Errorf("window %d allowed %d calls, the limit is %d", win, perWindow[win], n)
		}
	}
	return len(perWindow), nil
}

// checkLockout asserts the lockout rule of a fixed window of n calls per w
// with lock time lock: a window allows at most n calls; the first refusal
// (only once n were allowed) locks the key: every call is refused from it
// until lock has passed, and allowed again after, in a new window. It
// returns the number of locks seen.
func checkLockout(calls []call, n int, w, lock, tolerance time.Duration) (locks int, err error) {
	edge := tolerance.Microseconds()
	lus := lock.Microseconds()
	var end, lockedAt int64 // the current window's end; the lock's start, 0 if none
	count := 0
	for i, c := range calls {
		if c.res.Allowed {
			newWindow := i == 0 || lockedAt != 0 || c.at+c.res.ResetAfter.Microseconds() > end+edge
			switch {
			case !newWindow:
			case lockedAt != 0 && c.at < lockedAt+lus-edge:
				return 0, fmt.Errorf("call at %d allowed %dµs into a lock of %v", c.at, c.at-lockedAt, lock)
			case lockedAt == 0 && i > 0 && c.at < end-edge:
				return 0, fmt.Errorf("a window starts at %d, before the previous one ends at %d", c.at, end)
			case c.res.ResetAfter != w+expiryGrace:
				return 0, fmt.Errorf("the first call of a window at %d reports ResetAfter %v, want %v", c.at, c.res.ResetAfter, w+expiryGrace)
			}
			if newWindow {
				end, lockedAt, count = c.at+w.Microseconds(), 0, 0
			}
			if count++; count > n {
				return 0, fmt.Errorf("window ending at %d allowed %d calls, the limit is %d", end, count, n)
			}
			continue
		}
		switch {
		case lockedAt != 0 && c.at >= lockedAt+lus+edge:
			return 0, fmt.Errorf("call at %d refused %dµs after a lock of %v began", c.at, c.at-lockedAt, lock)
		case lockedAt != 0:
		case count < n:
			return 0, fmt.Errorf("call at %d refused after only %d calls in its window", c.at, count)
		case c.at >= end+edge:
			return 0, fmt.Errorf("call at %d refused after its window ended at %d", c.at, end)
		case c.res.RetryAfter != lock+expiryGrace:
			return 0, fmt.Errorf("the call at %d that locks the key reports RetryAfter %v, want %v", c.at, c.res.RetryAfter, lock+expiryGrace)
		default:
			lockedAt = c.at
			locks++
		}
	}
	return locks, nil
}
