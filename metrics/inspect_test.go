package metrics_test

import (
	"math"
	"testing"

	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/repo"
)

var _ metrics.InspectStatser = (*repo.InspectCounter)(nil)

type fixedInspectStats repo.InspectStats

func (f fixedInspectStats) Stats() repo.InspectStats { return repo.InspectStats(f) }

func TestInspectCollector_matchesStats(t *testing.T) {
	s := repo.InspectStats{Runs: 2, Inspected: 1000, Consistent: 990, Stale: 4, Ghost: 3, FalseNotFound: 2, DivergentMapping: 1,
		Suspects: 17, Skipped: 5, Repaired: 6}
	reg := registry(t, metrics.NewInspectCollector("main", fixedInspectStats(s)))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"asidekit_inspect_runs_total", nil, 2},
		{"asidekit_inspect_inspected_total", nil, 1000},
		{"asidekit_inspect_consistent_total", nil, 990},
		{"asidekit_inspect_violations_total", []string{"kind", "stale"}, 4},
		{"asidekit_inspect_violations_total", []string{"kind", "ghost"}, 3},
		{"asidekit_inspect_violations_total", []string{"kind", "false_not_found"}, 2},
		{"asidekit_inspect_violations_total", []string{"kind", "divergent_mapping"}, 1},
		{"asidekit_inspect_suspects_total", nil, 17},
		{"asidekit_inspect_skipped_total", nil, 5},
		{"asidekit_inspect_repaired_total", nil, 6},
	} {
		if got := gather(t, reg, c.name, append([]string{"inspector", "main"}, c.labels...)...).value; got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := cdcValue(t, reg, "asidekit_inspect_nines"); math.Abs(got-2) > 1e-9 {
		t.Errorf("nines = %v, want 2 (10 violations in 1000)", got)
	}
}

func TestInspectCollector_nilSource(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a nil source")
		}
	}()
	metrics.NewInspectCollector("main", nil)
}
