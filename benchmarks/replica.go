package benchmarks

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// Metrics of the replica scenario.
const (
	// MetricStaleFills counts the cache entries stored from a load that
	// returned a row older than a write acknowledged before the load
	// began (and then served to a read that did not load it).
	MetricStaleFills = "stale_fills"
	// MetricStaleReadsAfter1s counts reads that returned a row older than
	// a write acknowledged more than a second before the read began.
	MetricStaleReadsAfter1s = "stale_reads_after_1s"
	// MetricPrimaryLoadShare is the share of the cache misses' loads that
	// ran on the primary.
	MetricPrimaryLoadShare = "primary_load_share"
	// MetricRedirectedLag and MetricRedirectedUnknown count the measured
	// phase's loads sent to the primary because the replica had not
	// replayed the position the ids' versions record, or because that
	// position could not be read (after the warm-up read of every row:
	// none expected).
	MetricRedirectedLag     = "redirected_lag"
	MetricRedirectedUnknown = "redirected_unknown"
	MetricMissP50           = "miss_p50_ms"
	MetricMissP99           = "miss_p99_ms"
	// MetricStaleLoads counts the distinct (row, version) loads older
	// than a write acknowledged before the load began, stored or not.
	MetricStaleLoads = "stale_loads"
	MetricReads      = "reads"
)

// ReplicaParams size the replica scenario.
type ReplicaParams struct {
	// Load is the number of simulated processes (each with its own
	// *gorm.DB with dbresolver, Redis client, cache and repository) and
	// the reading goroutines of each, reading back to back.
	Load
	// Rows is the number of rows; Hot of them take 80% of the reads and
	// 70% of the writes.
	Rows int `json:"rows"`
	Hot  int `json:"hot_rows"`
	// WriteRate is the writes per second, through the repositories, spread
	// over the processes; Duration is how long reads and writes run.
	WriteRate int           `json:"writes_per_sec"`
	Duration  time.Duration `json:"duration"`
	// ApplyDelay is the replica's recovery_min_apply_delay: how far its
	// replay trails the primary.
	ApplyDelay time.Duration `json:"apply_delay"`
}

// DefaultReplicaParams are the sizes of the issue: a replica 200 ms
// behind, 4 processes.
func DefaultReplicaParams() ReplicaParams {
	return ReplicaParams{Load: Load{Instances: 4, Goroutines: 8}, Rows: 20000, Hot: 100,
		WriteRate: 100, Duration: 6 * time.Second, ApplyDelay: 200 * time.Millisecond}
}

// QuickReplicaParams finish the scenario in well under a minute.
func QuickReplicaParams() ReplicaParams {
	return ReplicaParams{Load: Load{Instances: 2, Goroutines: 4}, Rows: 4000, Hot: 20,
		WriteRate: 50, Duration: 3 * time.Second, ApplyDelay: 200 * time.Millisecond}
}

func (p ReplicaParams) norm() ReplicaParams {
	p.Load = p.Load.norm()
	p.Rows = max(p.Rows, 10)
	p.Hot = min(max(p.Hot, 1), p.Rows)
	p.WriteRate = max(p.WriteRate, 1)
	p.Duration = max(p.Duration, 1500*time.Millisecond)
	return p
}

// replicaVariant is one way of routing the misses' loads.
type replicaVariant struct {
	name, notes string
	replica     bool // dbresolver sends reads to the replica
	naive       bool // the replay-position check off
}

var replicaVariants = []replicaVariant{
	{"primary_only", "repo on the primary alone: every load on the primary", false, false},
	{"replica_naive", "dbresolver sends every load to the replica, however far behind (the LSN check off: how caches do it without one)", true, true},
	{"replica_lsn", "dbresolver with repo's LSN check: a load goes to the replica only when it has replayed the writes the ids' versions record", true, false},
}

// RunReplica runs reads and writes through repo on a PostgreSQL primary
// with one streaming replica that replays ApplyDelay behind (both started
// from the initdb, pg_basebackup and postgres binaries on PATH for the
// run): N processes read hot and cold rows back to back while writers bump
// rows' version column through the repositories. Variants primary_only,
// replica_naive (dbresolver, the LSN check off) and replica_lsn. A read
// that returns a version older than one acknowledged to a writer before
// it began is stale; a load that returned such a version and whose entry
// was then served to a read that did not load it is a stale fill. On the
// embedded backend, or without the PostgreSQL binaries, it returns a
// Result with a note and no rows.
func RunReplica(ctx context.Context, env *Env, p ReplicaParams) (Result, error) {
	p = p.norm()
	res := Result{Scenario: "replica", Backend: env.Backend, Params: paramsMap(p)}
	if env.Embedded() {
		res.Notes = append(res.Notes, "skipped: it needs a PostgreSQL primary and streaming replica (initdb, pg_basebackup, postgres on PATH) and a real Redis")
		return res, nil
	}
	sr, err := testcontainers.StartStreamingReplica(p.ApplyDelay)
	if err != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("skipped: no primary and replica from PATH: %v", err))
		return res, nil
	}
	defer sr.Close()
	if err := sr.Primary.DB.WithContext(ctx).AutoMigrate(&replicaItem{}); err != nil {
		return res, err
	}
	for i, v := range replicaVariants {
		row, err := runReplicaVariant(ctx, env, sr, p, v, int64(i)*int64(p.Rows))
		if err != nil {
			return res, fmt.Errorf("replica: %s: %w", v.name, err)
		}
		row.Variant, row.Notes = v.name, v.notes
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes,
		fmt.Sprintf("%d processes × %d reading goroutines, back to back, for %v; %d writes/s through repo (Modify version+1); replica apply delay %v",
			p.Instances, p.Goroutines, p.Duration, p.WriteRate, p.ApplyDelay),
		"stale: a read returned a version older than one acknowledged to a writer before it began (after_1s: more than a second before)",
		"stale_fills: distinct (row, version) entries loaded older than a write acknowledged before the load began, and served to a read that did not load them",
		"miss_*: latency of the reads whose own load ran; primary_load_share: loads on the primary / all loads (repo ReadStats)")
	return res, nil
}
