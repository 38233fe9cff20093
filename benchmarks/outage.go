package benchmarks

import (
	"context"
	"fmt"
	"time"
)

// Metrics of the outage scenario.
const (
	MetricThroughputBefore  = "throughput_before"
	MetricThroughputDuring  = "throughput_during"
	MetricP99During         = "p99_during_ms"
	MetricErrorsDuring      = "errors_during"
	MetricReadsDuring       = "reads_during"
	MetricLimiterFailOpen   = "limiter_fail_open"
	MetricSerials           = "serials"
	MetricDuplicateSerials  = "duplicate_serials"
	MetricAfterCommitErrors = "after_commit_errors"
	MetricRecovery          = "recovery_ms"
	// MetricHitRatioBefore is the share of reads served with no DB load
	// before the fault, MetricHitRatioEnd over the run's last second.
	MetricHitRatioBefore    = "hit_ratio_before"
	MetricHitRatioEnd       = "hit_ratio_end"
	MetricStaleDuring       = "stale_reads_before_restore"
	MetricStaleAfterRestore = "stale_reads_after_restore"
	MetricFalseNotFound     = "false_not_found"
	// MetricStaleAfterRestoreOOB counts the stale reads after the restore
	// that were older only than a plain-SQL write (repo/cdc's part), and
	// MetricLastStaleAfterRestore is when the last of them ended, from the
	// restore.
	MetricStaleAfterRestoreOOB  = "stale_after_restore_sql"
	MetricLastStaleAfterRestore = "last_stale_after_restore_ms"
	MetricStaleAfterStart       = "stale_reads_after_start"
	MetricChangedRows           = "changed_rows"
	MetricCatchUp               = "catch_up_ms"
)

// OutageParams size the outage scenario.
type OutageParams struct {
	// Load is the number of simulated processes (each a Kit, a Redis
	// client, a repository, a limiter and a generator of its own) and the
	// goroutines each runs requests on, back to back.
	Load
	// Rows is the number of rows that exist; Hot of them take 70% of the
	// reads, and 5% of the reads ask for ids that exist nowhere.
	Rows int `json:"rows"`
	Hot  int `json:"hot_rows"`
	// Before, Fault and After are how long the workload runs before the
	// Redis link is cut (or stalled), how long the fault lasts, and how
	// long it runs after the link is restored.
	Before time.Duration `json:"before"`
	Fault  time.Duration `json:"fault"`
	After  time.Duration `json:"after"`
	// OutOfBandRate is the plain-SQL writer's updates per second, run
	// beside the processes for the whole run (repo/cdc applies them).
	OutOfBandRate int `json:"out_of_band_writes_per_sec"`
}

// DefaultOutageParams are the sizes of the issue: 4 processes, a 5 s
// outage.
func DefaultOutageParams() OutageParams {
	return OutageParams{Load: Load{Instances: 4, Goroutines: 16}, Rows: 5000, Hot: 100,
		Before: 3 * time.Second, Fault: 5 * time.Second, After: 8 * time.Second, OutOfBandRate: 100}
}

// QuickOutageParams finish the scenario in well under a minute.
func QuickOutageParams() OutageParams {
	return OutageParams{Load: Load{Instances: 2, Goroutines: 8}, Rows: 1000, Hot: 50,
		Before: time.Second, Fault: 1500 * time.Millisecond, After: 2500 * time.Millisecond, OutOfBandRate: 50}
}

// outageFault is how the Redis link fails.
type outageFault string

const (
	faultCut   outageFault = "cut"
	faultStall outageFault = "stall"
)

// outageVariant is a Redis client configuration under test.
type outageVariant struct {
	name  string
	notes string
	kit   bool // the client settings asidekit.RecommendedTimeout gives; else go-redis's defaults
}

var outageVariants = []outageVariant{
	{"defaults", "go-redis's default client options (its default read, write and dial timeouts, no ContextTimeoutEnabled)", false},
	{"kit", "the client settings docs/namespaces.md gives (asidekit.RecommendedTimeout, ContextTimeoutEnabled, MinIdleConns 4)", true},
}

// RunOutage runs a service-shaped workload while the Redis link of every
// process is cut, then stalled, through a loopback proxy: N processes, each
// with a Kit, a repository (Bloom filter, null caching, Mutex, near cache),
// a fail-open GCRA limiter in front of every request and a sequence
// generator; 85% of requests read (hot, cold and absent ids), 10% write
// through the repository, 5% take a serial number, and a writer updates
// rows with plain SQL while a repo/cdc Invalidator follows the WAL. Each
// row carries a version, so a read that returns an older one than a write
// acknowledged before the read began is counted stale. Variants defaults
// and kit (go-redis's default client options against docs/namespaces.md's) times
// faults cut and stall, then restart: the processes are stopped, rows
// changed with plain SQL, new processes started, each with an
// Invalidator, that read every changed row at once. Every process runs an
// Invalidator (one holds the slot), whose recovery gate keeps its reads
// off the cache after a Redis failure, and at start, until the log has
// been applied up to the position at which Redis answered;
// kit/cut/no_gate and restart/no_gate run the Invalidator in a sidecar
// process instead, to show what the gate guards against.
//
// It needs a real standalone Redis and PostgreSQL with wal_level=logical;
// elsewhere it returns a Result with a note and no rows.
func RunOutage(ctx context.Context, env *Env, p OutageParams) (Result, error) {
	res := Result{Scenario: "outage", Backend: env.Backend, Params: paramsMap(p)}
	switch {
	case env.EmbeddedRedis || env.Cluster:
		res.Notes = append(res.Notes, "skipped: it cuts a loopback proxy in front of a real standalone Redis (use -redis)")
		return res, nil
	case env.EmbeddedDB:
		res.Notes = append(res.Notes, "skipped: SQLite has no WAL stream to follow (needs PostgreSQL with wal_level=logical)")
		return res, nil
	}
	var level string
	if err := env.DB.WithContext(ctx).Raw("SHOW wal_level").Scan(&level).Error; err != nil {
		return res, err
	}
	if level != "logical" {
		res.Notes = append(res.Notes, fmt.Sprintf("skipped: wal_level is %s, not logical (repo/cdc follows the out-of-band writes)", level))
		return res, nil
	}
	p = p.norm()
	if err := env.DB.WithContext(ctx).AutoMigrate(&outageItem{}); err != nil {
		return res, err
	}
	for _, v := range outageVariants {
		for _, f := range []outageFault{faultCut, faultStall} {
			name := v.name + "/" + string(f)
			row, err := runOutageFault(ctx, env, p, v, f, true)
			if err != nil {
				return res, fmt.Errorf("outage: %s: %w", name, err)
			}
			row.Variant, row.Notes = name, joinNotes(v.notes, row.Notes)
			res.Rows = append(res.Rows, row)
		}
	}
	// The recovery gate's effect: the Invalidator in a process of its
	// own, the serving processes without a gate.
	row, err := runOutageFault(ctx, env, p, outageVariants[1], faultCut, false)
	if err != nil {
		return res, fmt.Errorf("outage: kit/cut/no_gate: %w", err)
	}
	row.Variant, row.Notes = "kit/cut/no_gate", joinNotes("kit/cut with the Invalidator in a sidecar process: the serving processes have no recovery gate", row.Notes)
	res.Rows = append(res.Rows, row)
	for _, gate := range []bool{true, false} {
		row, err := runOutageRestart(ctx, env, p, gate)
		if err != nil {
			return res, fmt.Errorf("outage: %s: %w", row.Variant, err)
		}
		res.Rows = append(res.Rows, row)
	}
	foRows, foNotes, err := runOutageFailovers(ctx, env, p)
	if err != nil {
		return res, err
	}
	res.Rows, res.Notes = append(res.Rows, foRows...), append(res.Notes, foNotes...)
	res.Notes = append(res.Notes,
		fmt.Sprintf("%d processes × %d goroutines, requests back to back; Redis link cut or stalled %v after %v, restored %v before the end",
			p.Instances, p.Goroutines, p.Fault, p.Before, p.After),
		"throughput: requests completed per second; *_during: requests that began during the fault; recovery_ms: restore → the "+
			"share of reads served without a DB load back to 90% of its value before the fault (per 200 ms, -1: not within the run)",
		"stale: a read that returned a version older than one acknowledged to a writer before the read began (repo writes, "+
			"ErrAfterCommit included); after the restore also older than a plain-SQL write committed before it; "+
			"a read older only than other processes' repo writes (nil) returned less than stale_local_window_ms before it "+
			"(50 ms, or the p99 latency before the fault if longer) is the near cache's propagation delay (docs/near-cache.md), "+
			"counted in stale_local_propagation instead",
		"the simulated processes share one binary, so they share repo's process-wide after-commit retrier")
	return res, nil
}

func (p OutageParams) norm() OutageParams {
	p.Load = p.Load.norm()
	p.Rows = max(p.Rows, 10)
	p.Hot = min(max(p.Hot, 1), p.Rows)
	p.OutOfBandRate = max(p.OutOfBandRate, 1)
	return p
}

// joinNotes joins a row's description and what its run noted.
func joinNotes(desc, run string) string {
	if run == "" {
		return desc
	}
	return desc + "; " + run
}
