package chaos

import (
	"fmt"
	"time"
)

// outageLane is the start of process 0's lane in every schedule: its
// limiter's Redis (the guard link) and its generator's Redis (the cache
// link) are cut, then stalled, one after the other, so that every run
// exercises checkOutage. It returns the faults from t and the time after
// them.
func outageLane(t time.Duration) ([]Fault, time.Duration) {
	var out []Fault
	for _, f := range []Fault{
		{Kind: FaultCut, Link: LinkGuard, Dur: 1500 * time.Millisecond},
		{Kind: FaultStall, Link: LinkGuard, Dur: time.Second},
		{Kind: FaultCut, Link: LinkCache, Dur: 1500 * time.Millisecond},
		{Kind: FaultStall, Link: LinkCache, Dur: time.Second},
	} {
		f.At, f.Proc = t, 0
		out = append(out, f)
		t += f.Dur + 500*time.Millisecond
	}
	return out, t
}

// outageOf is the Redis link an operation's component uses: the
// limiter's is the guard Redis, the generator's the cache Redis.
func outageOf(k Kind) (Link, bool) {
	switch k {
	case OpAllow:
		return LinkGuard, true
	case OpSerial:
		return LinkCache, true
	}
	return "", false
}

// limiterOutageErr are the error kinds the limiter documents for a Redis
// it cannot reach (fail-closed, as the run's limiter is): the link's own
// error or a timeout, or ErrBreakerOpen while its breaker is open.
var limiterOutageErr = map[string]bool{"timeout": true, "conn": true, "breaker_open": true}

// checkOutage reads the limiter's and the generator's calls that ran
// while their own Redis, and nothing else they use, was cut or stalled
// for their process: a serial number must still be issued (seqgen takes
// its segments from PostgreSQL), and the limiter may fail only with the
// errors it documents. It returns the number of such calls, the
// violations and the errors by kind.
func checkOutage(ops []Op, faults []Fault) (n int, vs []Violation, errs counts) {
	errs = counts{}
	for _, op := range ops {
		link, ok := outageOf(op.Kind)
		if !ok || !redisOutage(op, link, faults) {
			continue
		}
		n++
		if op.Err == "" {
			continue
		}
		errs[op.ErrKind]++
		switch {
		case op.ErrKind == "terminated":
			// A pg_terminate fault ended the pooled connection the call
			// drew: its effect outlasts the instant the fault is recorded
			// at, so redisOutage cannot exclude the call by time.
		case op.Kind == OpSerial:
			vs = append(vs, Violation{Check: "outage", At: op.Start, Ops: []int{op.ID},
				Msg: fmt.Sprintf("proc %d: no serial while its Redis was down (PostgreSQL up): %s", op.Proc, op.Err)})
		case !limiterOutageErr[op.ErrKind]:
			vs = append(vs, Violation{Check: "outage", At: op.Start, Ops: []int{op.ID},
				Msg: fmt.Sprintf("proc %d: limiter error while its Redis was down is none it documents (%s): %s", op.Proc, op.ErrKind, op.Err)})
		}
	}
	return n, vs, errs
}

// redisOutage reports whether op ran within a cut or stall of link for
// its process and overlapped no other fault of that process or of a
// server (which may fail it for reasons of their own).
func redisOutage(op Op, link Link, faults []Fault) bool {
	inside := false
	for _, f := range faults {
		if f.Proc != -1 && f.Proc != op.Proc {
			continue
		}
		during := op.Start < f.At+f.Dur && op.End >= f.At
		if !during {
			continue
		}
		if f.Proc == op.Proc && f.Link == link && (f.Kind == FaultCut || f.Kind == FaultStall) &&
			op.Start >= f.At && op.Start < f.At+f.Dur {
			inside = true
			continue
		}
		return false
	}
	return inside
}
