package benchmarks_test

import (
	"context"
	"strings"
	"testing"

	"github.com/asidekit/asidekit/benchmarks"
)

// On real servers, asidekit's lists miss no completed write while
// ttl_lists' do, the uncached sql variant passes the same check (no false
// alarms), and asidekit reads the database less than sql.
func TestQuery_real(t *testing.T) {
	t.Parallel()
	env := logicalEnv(t)
	res, err := benchmarks.RunQuery(context.Background(), env, benchmarks.TestQueryParams())
	if err != nil {
		t.Fatal(err)
	}
	logRows(t, res)
	for _, v := range []string{"sql", "ttl_lists", "asidekit", "asidekit_cdc"} {
		if n := metric(t, res, v, benchmarks.MetricCheckedListReads); n == 0 {
			t.Errorf("%s: no list read was checked", v)
		}
		if n := metric(t, res, v, benchmarks.MetricWrites); n == 0 {
			t.Errorf("%s: no writes", v)
		}
	}
	for _, v := range []string{"sql", "asidekit"} {
		if n := metric(t, res, v, benchmarks.MetricStaleListReads); n != 0 {
			t.Errorf("%s: stale_list_reads = %v, want 0", v, n)
		}
	}
	if n := metric(t, res, "ttl_lists", benchmarks.MetricStaleListReads); n == 0 {
		t.Error("ttl_lists: stale_list_reads = 0, want > 0 (lists never invalidated)")
	}
	a, s := metric(t, res, "asidekit", benchmarks.MetricDBQueriesPerListRead), metric(t, res, "sql", benchmarks.MetricDBQueriesPerListRead)
	if a >= s {
		t.Errorf("db_queries_per_list_read: asidekit %v, sql %v; want asidekit's lower", a, s)
	}
	if n := metric(t, res, "asidekit", benchmarks.MetricInvalidationsPerWrite); n == 0 {
		t.Error("asidekit: invalidations_per_write = 0")
	}
}

// On the embedded backend the counts hold: asidekit's lists are never
// stale, and asidekit_cdc is skipped with a note.
func TestQuery_embedded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := embeddedEnv(t)
	res, err := benchmarks.RunQuery(ctx, env, benchmarks.TestQueryParams())
	if err != nil {
		t.Fatal(err)
	}
	logRows(t, res)
	if res.Row("asidekit_cdc") != nil || len(res.Notes) == 0 || !strings.HasPrefix(res.Notes[0], "asidekit_cdc: skipped") {
		t.Errorf("asidekit_cdc not skipped with a note: %v", res.Notes)
	}
	if n := metric(t, res, "asidekit", benchmarks.MetricStaleListReads); n != 0 {
		t.Errorf("asidekit: stale_list_reads = %v, want 0", n)
	}
	if n := metric(t, res, "asidekit", benchmarks.MetricListReads); n == 0 {
		t.Error("asidekit: no list read")
	}
}
