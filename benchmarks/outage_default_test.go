package benchmarks_test

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/asidekit/asidekit/benchmarks"
)

// At the default size (4 processes × 16 goroutines, a 5 s fault),
// only when ASIDEBENCH_OUTAGE_DEFAULT is set to a number of rounds (it
// takes about 20 s per row): the kit rows read nothing stale after the
// restore. Each stale read is described in the row's notes.
func TestOutage_kitDefaultSize(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("ASIDEBENCH_OUTAGE_DEFAULT"))
	local := os.Getenv("ASIDEBENCH_OUTAGE_NO_LOCAL") == ""
	if rounds <= 0 {
		t.Skip("set ASIDEBENCH_OUTAGE_DEFAULT=<rounds> to run the kit rows at the default size")
	}
	env := logicalEnv(t)
	for i := range rounds {
		for _, f := range []string{"cut", "stall"} {
			row, err := benchmarks.RunOutageKit(context.Background(), env, benchmarks.DefaultOutageParams(), f, local)
			if err != nil {
				t.Fatal(err)
			}
			after, _ := row.Get(benchmarks.MetricStaleAfterRestore)
			before, _ := row.Get(benchmarks.MetricStaleDuring)
			ac, _ := row.Get(benchmarks.MetricAfterCommitErrors)
			local, _ := row.Get(benchmarks.MetricStaleLocal)
			localMax, _ := row.Get(benchmarks.MetricStaleLocalMax)
			t.Logf("round %d kit/%s: stale after restore %v, before %v, near-cache propagation %v (max %.1f ms), after_commit_errors %v; %s",
				i, f, after, before, local, localMax, ac, row.Notes)
			if after != 0 {
				t.Errorf("round %d kit/%s: stale_reads_after_restore = %v", i, f, after)
			}
		}
	}
}
