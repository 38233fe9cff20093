package metrics_test

import (
	"testing"

	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/repo"
)

func TestAfterCommitCollector_matchesStats(t *testing.T) {
	s := repo.AfterCommitStats{Failures: 1, Retried: 2, Dropped: 3, Pending: 4, Unknown: 5, Distrusts: 6}
	reg := registry(t, metrics.NewAfterCommitCollector(func() repo.AfterCommitStats { return s }))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if m.Gauge != nil {
				got[mf.GetName()] = m.GetGauge().GetValue()
			} else {
				got[mf.GetName()] = m.GetCounter().GetValue()
			}
		}
	}
	for name, want := range map[string]float64{
		"asidekit_repo_upkeep_failures_total":        1,
		"asidekit_repo_upkeep_retried_total":         2,
		"asidekit_repo_upkeep_dropped_total":         3,
		"asidekit_repo_upkeep_pending":               4,
		"asidekit_repo_unknown_outcome_writes_total": 5,
		"asidekit_repo_filter_distrusts_total":       6,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	// nil reads the process's own counters.
	if err := reg.Register(metrics.NewAfterCommitCollector(nil)); err == nil {
		t.Error("a second collector of the same metrics registered: want a duplicate error")
	}
	if _, err := registry(t, metrics.NewAfterCommitCollector(nil)).Gather(); err != nil {
		t.Error(err)
	}
}
