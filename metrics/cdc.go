package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/repo/cdc"
)

// CDCStatser is what NewCDCCollector reads: a *cdc.Invalidator.
type CDCStatser interface {
	Stats() cdc.Stats
}

// NewCDCCollector returns a Collector of src's cdc.Stats, read at each
// scrape, with the constant label invalidator=name:
//
//	asidekit_cdc_transactions_total{invalidator}     counter
//	asidekit_cdc_changes_total{invalidator}          counter
//	asidekit_cdc_skipped_total{invalidator}          counter
//	asidekit_cdc_undecoded_total{invalidator}        counter, changes applied by the safe path (a column's value could not be decoded)
//	asidekit_cdc_errors_total{invalidator}           counter
//	asidekit_cdc_slots_recreated_total{invalidator}  counter
//	asidekit_cdc_standby_checks_total{invalidator}   counter, checks of a stand-by that found the slot held
//	asidekit_cdc_active{invalidator}                 gauge, 1 while this process holds the slot
//	asidekit_cdc_bad_tables{invalidator}             gauge
//	asidekit_cdc_lag_bytes{invalidator}              gauge
//	asidekit_cdc_lag_seconds{invalidator}            gauge
//	asidekit_cdc_pending_changes{invalidator}        gauge, row changes received of transactions not yet applied
//	asidekit_cdc_pending_done{invalidator}           gauge, of them, those in the cache already (a big transaction's progress)
//
// Alert on lag_bytes and lag_seconds of the active process, on errors
// growing, on slots_recreated_total growing (a lost slot: changes were
// missed, and every cached row was invalidated), and on no process of the
// service being active (OPERATIONS.md).
// A nil src panics here rather than at every scrape: it is a wiring
// mistake, best found when the service starts.
func NewCDCCollector(name string, src CDCStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewCDCCollector with a nil source")
	}
	c := &gaugedCollector[cdc.Stats]{snapshotCollector: newSnapshotCollector("cdc", "invalidator", name, src.Stats)}
	desc := c.desc
	c.counter(desc("transactions_total", "Transactions applied to the cache (a replayed one counts again)."),
		func(s cdc.Stats) float64 { return float64(s.Transactions) })
	c.counter(desc("changes_total", "Row changes applied to the cache; a TRUNCATE counts one per table."),
		func(s cdc.Stats) float64 { return float64(s.Changes) })
	c.counter(desc("skipped_total", "Row changes of relations not registered with the Invalidator."),
		func(s cdc.Stats) float64 { return float64(s.Skipped) })
	c.counter(desc("undecoded_total", "Row changes with a column value that could not be decoded, applied by the safe superset (never skipped)."),
		func(s cdc.Stats) float64 { return float64(s.Undecoded) })
	c.counter(desc("errors_total", "Failures retried: Redis refusing a batch, a lost database connection."),
		func(s cdc.Stats) float64 { return float64(s.Errors) })
	c.counter(desc("slots_recreated_total", "Lost replication slots (wal_status lost) dropped and recreated; each invalidates every cached row."),
		func(s cdc.Stats) float64 { return float64(s.SlotsRecreated) })
	c.counter(desc("standby_checks_total", "Checks of a stand-by that found the slot still held by another process."),
		func(s cdc.Stats) float64 { return float64(s.StandbyChecks) })
	c.gauge(desc("active", "1 while this process holds the replication slot and applies, 0 while it stands by."),
		func(s cdc.Stats) float64 {
			if s.Active {
				return 1
			}
			return 0
		})
	c.gauge(desc("bad_tables", "Registered tables left out of the publication (missing, or no primary key)."),
		func(s cdc.Stats) float64 { return float64(s.BadTables) })
	c.gauge(desc("lag_bytes", "Bytes of WAL between the server's end and the position applied to the cache."),
		func(s cdc.Stats) float64 { return float64(s.LagBytes) })
	c.gauge(desc("lag_seconds", "Seconds since the transaction being applied committed; 0 when caught up."),
		func(s cdc.Stats) float64 { return s.Lag.Seconds() })
	c.gauge(desc("pending_changes", "Row changes received of the transactions not yet applied; 0 when caught up."),
		func(s cdc.Stats) float64 { return float64(s.Pending) })
	c.gauge(desc("pending_done", "Of the pending row changes, those already in the cache: a transaction larger than BatchSize is applied a batch at a time."),
		func(s cdc.Stats) float64 { return float64(s.PendingDone) })
	return c
}
