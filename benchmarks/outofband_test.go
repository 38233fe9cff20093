package benchmarks_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

func TestOutOfBand_embeddedSkips(t *testing.T) {
	ctx := context.Background()
	env := embeddedEnv(t)
	res, err := benchmarks.RunOutOfBand(ctx, env, benchmarks.DefaultOutOfBandParams())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 0 || len(res.Notes) != 1 || !strings.HasPrefix(res.Notes[0], "skipped") {
		t.Fatalf("result = %+v, want no rows and a one-line skip note", res)
	}
}

// On a logical-replication server, ttl_only leaves rows stale and inserted
// ids "not found"; cdc and cdc_restart leave nothing behind.
func TestOutOfBand_real(t *testing.T) {
	t.Parallel()
	env := logicalEnv(t)
	p := benchmarks.OutOfBandParams{Instances: 2, Rate: 200, Duration: time.Second, Cap: time.Second, BulkRows: 2000,
		BurstRate: 200, BurstFor: 500 * time.Millisecond, TruncateRows: 2000}
	res, err := benchmarks.RunOutOfBand(context.Background(), env, p)
	if err != nil {
		t.Fatal(err)
	}
	logRows(t, res)
	if metric(t, res, "ttl_only", benchmarks.MetricStaleAtEnd) == 0 || metric(t, res, "ttl_only", benchmarks.MetricBloomFalseNeg) == 0 {
		t.Error("ttl_only should leave stale rows and Bloom false negatives")
	}
	for _, v := range []string{"cdc", "cdc_restart"} {
		if n := metric(t, res, v, benchmarks.MetricStaleAtEnd); n != 0 {
			t.Errorf("%s: stale_at_end = %v", v, n)
		}
		if n := metric(t, res, v, benchmarks.MetricBloomFalseNeg); n != 0 {
			t.Errorf("%s: bloom_false_negatives = %v", v, n)
		}
	}
	if n := metric(t, res, "cdc_restart", benchmarks.MetricLostInvalidated); n != 0 {
		t.Errorf("lost_invalidations = %v", n)
	}
	if n := metric(t, res, "cdc", benchmarks.MetricBulkRows); n != 2000 {
		t.Errorf("cdc: bulk_rows = %v, want 2000", n)
	}
	if n := metric(t, res, "cdc", benchmarks.MetricBulkStale); n != 0 {
		t.Errorf("cdc: bulk_stale = %v: rows read old after the bulk UPDATE was applied", n)
	}
	if n := metric(t, res, "cdc", benchmarks.MetricTruncateStale); n != 0 {
		t.Errorf("cdc: truncate_stale = %v: rows read old after the TRUNCATE and INSERT were applied", n)
	}
	if n := metric(t, res, "cdc", benchmarks.MetricBurstWrites); n == 0 {
		t.Error("cdc: the burst made no write")
	}
	for _, m := range []string{benchmarks.MetricBulkApplyMS, benchmarks.MetricBulkApplyFullMS, benchmarks.MetricBulkApplyColdMS, benchmarks.MetricTruncateMS, benchmarks.MetricBurstLagMS} {
		if ms := metric(t, res, "cdc", m); ms <= 0 {
			t.Errorf("cdc: %s = %v", m, ms)
		}
	}
}
