package chaos

import (
	"fmt"
	"sort"
	"time"
)

// checkSerials finds serial numbers issued twice, and numbers above the
// database's mark for their day (marks: day → high-water mark).
func checkSerials(ops []Op, marks map[string]int64) (n int, vs []Violation) {
	seen := map[string]*Op{}
	for i := range ops {
		op := &ops[i]
		if op.Kind != OpSerial {
			continue
		}
		n++
		if op.Err != "" {
			continue
		}
		if first, dup := seen[op.Token]; dup {
			vs = append(vs, Violation{Check: "seqgen", At: op.Start, Ops: []int{first.ID, op.ID},
				Msg: fmt.Sprintf("serial %s issued twice: to proc %d at %v and to proc %d at %v", op.Token, first.Proc, first.Start, op.Proc, op.Start)})
			continue
		}
		seen[op.Token] = op
		day := serialDay(op.Token)
		if mark, ok := marks[day]; !ok || op.Value > mark {
			vs = append(vs, Violation{Check: "seqgen", At: op.Start, Ops: []int{op.ID},
				Msg: fmt.Sprintf("serial %s is above the database's mark %d for %s", op.Token, mark, day)})
		}
	}
	return n, vs
}

// serialDay is the yyyymmdd of a serial: between the biz and the counter.
func serialDay(s string) string {
	if len(s) < len(serialBiz)+8+serialSize {
		return ""
	}
	return s[len(s)-serialSize-8 : len(s)-serialSize]
}

// checkLimiter finds more than limitN allowed calls that all happened
// within less than the window: calls whose start and end all lie in an
// interval shorter than limitW were decided, on the server, less than
// limitW apart. A millisecond of margin covers rounding.
func checkLimiter(ops []Op) (n int, vs []Violation) {
	var allowed []Op
	for _, op := range ops {
		if op.Kind != OpAllow {
			continue
		}
		n++
		if op.Value == 1 {
			allowed = append(allowed, op)
		}
	}
	sort.Slice(allowed, func(i, j int) bool { return allowed[i].Start < allowed[j].Start })
	w := limitW - 1e6
	for i := 0; i < len(allowed); i++ {
		var in []int
		for j := i; j < len(allowed) && allowed[j].Start < allowed[i].Start+w; j++ {
			if allowed[j].End < allowed[i].Start+w {
				in = append(in, allowed[j].ID)
			}
		}
		if len(in) > limitN {
			vs = append(vs, Violation{Check: "limiter", At: allowed[i].Start, Ops: in,
				Msg: fmt.Sprintf("%d calls allowed within %v from %v; the limit is %d per %v", len(in), w, allowed[i].Start, limitN, limitW)})
			i += len(in) - 1 // one report per burst
		}
	}
	return n, vs
}

// loadRound is one expiry of a hot key in the loads check: how many
// loader calls, across all processes, the burst of reads after it made.
type loadRound struct {
	Entity string        `json:"entity"`
	Loads  int           `json:"loads"`
	Max    int           `json:"max"`
	At     time.Duration `json:"at"`
	// Why counts the events during the round after which a reader loads
	// on its own (bypass, lock_timeout, lease_lost) and the refreshes ahead
	// of the expiry (refresh), refused stores and invalidation retries,
	// across processes.
	Why counts `json:"why,omitempty"`
}

// checkLoads finds expiries that cost more loads than the strategy allows:
// Max, plus one per failed load (load_error), since a holder whose load
// fails gives its lease up and a waiter loads again; the strategies
// promise one load per expiry across processes for loads that succeed.
// After faults a pooled connection they broke can fail a burst's first
// load: with AsyncRefresh and EarlyRefresh as with Mutex (cacheaside's
// TestGetMany_holderFails_everyLeasingStrategy).
func checkLoads(rounds []loadRound) (vs []Violation) {
	for _, r := range rounds {
		if r.Loads > r.Max+r.Why["load_error"] {
			vs = append(vs, Violation{Check: "loads", At: r.At,
				Msg: fmt.Sprintf("%s: %d loads after one expiry, at most %d allowed (events meanwhile: %v)", r.Entity, r.Loads, r.Max, r.Why)})
		}
	}
	return vs
}
