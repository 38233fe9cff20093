package benchmarks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestOutage_embeddedSkips(t *testing.T) {
	ctx := context.Background()
	env := embeddedEnv(t)
	res, err := benchmarks.RunOutage(ctx, env, benchmarks.QuickOutageParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 0 || len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], "skipped") {
		t.Fatalf("result = %+v, want no rows and a one-line skip note", res)
	}
}

// outageRecoveryClosed turns on the check that no read after a Redis
// outage is older than a write acknowledged before it (issue 28): every
// process runs an Invalidator, whose recovery gate keeps its reads off
// the cache after a Redis failure until the log up to the position at
// which Redis answered again has been applied.
const outageRecoveryClosed = true

// At its smallest size, on real servers: reads went on during every
// fault, no serial was issued twice, and no read after the restore or
// after a restart was older than a write acknowledged before
// it. Speeds are logged, never asserted.
func TestOutage_real(t *testing.T) {
	// repo's after-commit retrier is one goroutine per binary, not per
	// repository: the outage leaves it work that outlives the run's caches.
	opts := append(testcontainers.GoleakOptions(goleak.IgnoreCurrent()),
		goleak.IgnoreAnyFunction("github.com/asidekit/asidekit/repo.(*upkeepRetrier).loop"))
	t.Cleanup(func() { goleak.VerifyNone(t, opts...) })
	env := logicalEnv(t)
	p := benchmarks.OutageParams{Load: benchmarks.Load{Instances: 2, Goroutines: 4}, Rows: 200, Hot: 20,
		Before: 500 * time.Millisecond, Fault: 2 * time.Second, After: time.Second, OutOfBandRate: 50}
	res, err := benchmarks.RunOutage(context.Background(), env, p)
	if err != nil {
		t.Fatal(err)
	}
	logRows(t, res)
	for _, v := range []string{"defaults/cut", "defaults/stall", "kit/cut", "kit/stall"} {
		// With go-redis's defaults a stall can hold every goroutine in
		// its first Redis call for the whole fault: that is what the
		// defaults rows show, so only the kit rows must read through it.
		if n := metric(t, res, v, benchmarks.MetricReadsDuring); n == 0 && strings.HasPrefix(v, "kit/") {
			t.Errorf("%s: no read began during the fault", v)
		}
		if n := metric(t, res, v, benchmarks.MetricSerials); n == 0 {
			t.Errorf("%s: no serial issued", v)
		}
		if n := metric(t, res, v, benchmarks.MetricDuplicateSerials); n != 0 {
			t.Errorf("%s: duplicate_serials = %v", v, n)
		}
		if n := metric(t, res, v, benchmarks.MetricStaleAfterRestore); n != 0 {
			// With go-redis's default timeouts (5 s) a shorter stall fails
			// no call: no process sees an outage, so no gate closes, and
			// the stall's plain-SQL writes are read stale until the
			// Invalidator's delayed calls land (docs/outages.md: what remains).
			if outageRecoveryClosed && strings.HasPrefix(v, "kit/") {
				t.Errorf("%s: stale_reads_after_restore = %v", v, n)
			} else {
				t.Logf("%s: stale_reads_after_restore = %v (not asserted: a stall within the client's timeouts fails no call)", v, n)
			}
		}
	}
	if n := metric(t, res, "restart", benchmarks.MetricChangedRows); n == 0 {
		t.Error("restart: no row changed")
	}
	if n := metric(t, res, "restart", benchmarks.MetricStaleAfterStart); n != 0 {
		t.Errorf("restart: stale_reads_after_start = %v", n)
	}
	// Without the gate (the Invalidator in a sidecar started after the
	// reads) the rows changed while the service was down are read stale.
	if n := metric(t, res, "restart/no_gate", benchmarks.MetricStaleAfterStart); n == 0 {
		t.Error("restart/no_gate: stale_reads_after_start = 0: the restart check proves nothing")
	}
	// A failover after writes the killed master's replica never got: with
	// ReplicaAcks none of them was reported done, so no read older than a
	// completed write (or than the process's own pending one); without,
	// the promoted replica serves the old entries.
	if n := metric(t, res, "failover", benchmarks.MetricWritesCut); n == 0 {
		t.Error("failover: no write while the replica was cut off")
	}
	if n := metric(t, res, "failover", benchmarks.MetricStaleAfterFailover); n != 0 {
		t.Errorf("failover: stale_reads_after_failover = %v", n)
	}
	if n := metric(t, res, "failover/no_acks", benchmarks.MetricStaleAfterFailover); n == 0 {
		t.Error("failover/no_acks: stale_reads_after_failover = 0: the failover check proves nothing")
	}
	t.Logf("failover: %s = %v (another process's unconfirmed write; docs/outages.md: what remains)",
		benchmarks.MetricStaleAfterFailoverOthers, metric(t, res, "failover", benchmarks.MetricStaleAfterFailoverOthers))
	t.Logf("kit/cut/no_gate: stale_reads_after_restore = %v (the gate's effect; not asserted: it depends on timing)",
		metric(t, res, "kit/cut/no_gate", benchmarks.MetricStaleAfterRestore))
}
