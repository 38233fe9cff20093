package metrics_test

import (
	"testing"

	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/repo"
)

type queryRow struct {
	ID    int64
	Group int64
}

var _ metrics.QueryStatser = (*repo.Query[queryRow, int64])(nil)

type fixedQueryStats repo.QueryStats

func (f fixedQueryStats) Stats() repo.QueryStats { return repo.QueryStats(f) }

func TestQueryCollector_matchesStats(t *testing.T) {
	s := repo.QueryStats{Hits: 9, Misses: 2, Loads: 2, Invalidations: 7, Fallbacks: 3, Patches: 4}
	reg := registry(t, metrics.NewQueryCollector("by_group", fixedQueryStats(s)))
	for _, c := range []struct {
		name string
		want float64
	}{
		{"asidekit_query_invalidations_total", 7},
		{"asidekit_query_fallbacks_total", 3},
		{"asidekit_query_patches_total", 4},
	} {
		if got := gather(t, reg, c.name, "query", "by_group").value; got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestQueryCollector_nilSource(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a nil source")
		}
	}()
	metrics.NewQueryCollector("by_group", nil)
}
