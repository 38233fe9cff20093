package benchmarks

import (
	"slices"
	"time"
)

// Metrics of the outage scenario's latency breakdown.
const (
	// MetricP99Before is the p99 latency of the requests that began
	// before the fault, the same workload with Redis healthy.
	MetricP99Before = "p99_before_ms"
	// MetricP99DuringSteady is the p99 latency of the requests that began
	// outageSettle or more after the fault began: p99_during without the
	// requests caught in flight when it began.
	MetricP99DuringSteady = "p99_during_steady_ms"
	// MetricGuardOpensBefore counts the times a process's node guard
	// opened its breaker before the fault, Redis healthy: false trips of
	// its CallTimeout on a busy machine.
	MetricGuardOpensBefore = "guard_opens_before"
)

// outageSettle is how long after the fault's start a request must begin
// to count in MetricP99DuringSteady; outageSlow is the latency above which
// a request during the fault is counted slow, by its slowest step.
const (
	outageSettle = 500 * time.Millisecond
	outageSlow   = 50 * time.Millisecond
)

// The steps of a request: the limiter, then one operation.
const (
	stepLimiter = iota
	stepRead
	stepWrite
	stepSerial
	numOutageSteps
)

var outageStepNames = [numOutageSteps]string{"limiter", "read", "write", "serial"}

// outageSteps is how long one request's steps took.
type outageSteps struct {
	limiter, op time.Duration
	kind        int // stepRead, stepWrite or stepSerial; 0 if the limiter refused
}

// recordDuring records a request that began during the fault, at start,
// and ended at done.
func (t *outageTally) recordDuring(start, done time.Time, c *outageClock, st *outageSteps) {
	lat := done.Sub(start)
	t.latDuring = append(t.latDuring, lat)
	if start.Sub(time.Unix(0, c.fault.Load())) >= outageSettle {
		t.latSteady = append(t.latSteady, lat)
	}
	t.stepDuring[stepLimiter] = append(t.stepDuring[stepLimiter], st.limiter)
	if st.kind != 0 {
		t.stepDuring[st.kind] = append(t.stepDuring[st.kind], st.op)
	}
	if lat > outageSlow {
		slowest := stepLimiter
		if st.kind != 0 && st.op > st.limiter {
			slowest = st.kind
		}
		t.slowBy[slowest]++
	}
}

// setSteps sets, per step, the p99 of its latency during the fault
// (p99_during_<step>_ms) and the number of requests slower than
// outageSlow that it was the slowest step of (slow_during_<step>).
func (t *outageTally) setSteps(row *Row) {
	for i, name := range outageStepNames {
		slices.Sort(t.stepDuring[i])
		row.Set("p99_during_"+name+"_ms", quantileMs(t.stepDuring[i], 0.99))
		row.Set("slow_during_"+name, float64(t.slowBy[i]))
	}
}

// guardOpens is how many times the node guards of procs opened.
func guardOpens(procs []*outageProc) uint64 {
	var n uint64
	for _, pr := range procs {
		for _, node := range pr.kit.RedisNodes() {
			n += node.Opens
		}
	}
	return n
}
