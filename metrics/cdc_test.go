package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/repo/cdc"
)

var _ metrics.CDCStatser = (*cdc.Invalidator)(nil)

type fixedCDCStats cdc.Stats

func (f fixedCDCStats) Stats() cdc.Stats { return cdc.Stats(f) }

func TestCDCCollector_matchesStats(t *testing.T) {
	s := cdc.Stats{Active: true, Transactions: 7, Changes: 11, Skipped: 2, Undecoded: 6, Errors: 3, SlotsRecreated: 4, BadTables: 1, StandbyChecks: 5,
		LagBytes: 4096, Lag: 1500 * time.Millisecond, Pending: 50_000, PendingDone: 12_000}
	reg := registry(t, metrics.NewCDCCollector("main", fixedCDCStats(s)))
	for name, want := range map[string]float64{
		"asidekit_cdc_transactions_total":    7,
		"asidekit_cdc_changes_total":         11,
		"asidekit_cdc_skipped_total":         2,
		"asidekit_cdc_undecoded_total":       6,
		"asidekit_cdc_errors_total":          3,
		"asidekit_cdc_slots_recreated_total": 4,
		"asidekit_cdc_standby_checks_total":  5,
		"asidekit_cdc_active":                1,
		"asidekit_cdc_bad_tables":            1,
		"asidekit_cdc_lag_bytes":             4096,
		"asidekit_cdc_lag_seconds":           1.5,
		"asidekit_cdc_pending_changes":       50_000,
		"asidekit_cdc_pending_done":          12_000,
	} {
		if got := cdcValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// cdcValue returns the value of the one series of name, counter or gauge.
func cdcValue(t *testing.T, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) != 1 {
			continue
		}
		m := mf.GetMetric()[0]
		if m.GetLabel()[0].GetValue() != "main" {
			t.Errorf("%s: labels %v", name, m.GetLabel())
		}
		if m.Gauge != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("no single series %s", name)
	return 0
}
