package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// Metrics of the outage scenario's failover rows.
const (
	// MetricStaleAfterFailover counts the reads that began after the
	// failover and returned a version older than a write that returned nil
	// before they began, or than the reading process's own ErrAfterCommit
	// write (what ReplicaAcks promises).
	MetricStaleAfterFailover = "stale_reads_after_failover"
	// MetricStaleAfterFailoverOthers counts those older only than another
	// process's ErrAfterCommit write, one that no replica had confirmed
	// when the master died (docs/outages.md: what remains with ReplicaAcks).
	MetricStaleAfterFailoverOthers = "stale_after_failover_others_pending"
	// MetricWritesCut counts the writes made while the killed master's
	// replica was cut off, MetricFailover the time from the kill until the
	// replica served as master and every process's client routed to it.
	MetricWritesCut = "writes_during_cut"
	MetricFailover  = "failover_ms"
)

// runOutageFailovers runs the failover rows, each on a private 3-master +
// 3-replica Redis Cluster from PATH: failover with ReplicaAcks 1 (docs/outages.md's
// setting) and failover/no_acks without. With no redis-server on PATH it
// returns a note and no rows.
func runOutageFailovers(ctx context.Context, env *Env, p OutageParams) ([]Row, []string, error) {
	var rows []Row
	for _, acks := range []int{1, 0} {
		row, err := runOutageFailover(ctx, env, p, acks)
		if errors.Is(err, errNoCluster) {
			return nil, []string{"failover rows skipped: " + err.Error()}, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("outage: %s: %w", row.Variant, err)
		}
		rows = append(rows, row)
	}
	return rows, []string{"failover rows: a private 3-master + 3-replica Redis Cluster from PATH per row; one master's replica " +
		"cut off (paused, its link killed), every process writes rows, the master killed (SIGKILL) and its replica promoted " +
		"(CLUSTER FAILOVER TAKEOVER); stale_reads_after_failover: reads that began after the promotion and returned a version " +
		"older than a write that returned nil before them, or than the reading process's own ErrAfterCommit write"}, nil
}

// errNoCluster is returned when the private Cluster cannot be started.
var errNoCluster = errors.New("no private Redis Cluster (redis-server on PATH)")

// foProc is one process of the failover rows: a Kit over a ClusterClient
// of its own and a repository, without near cache or filter.
type foProc struct {
	client *redis.ClusterClient
	kit    *asidekit.Kit
	items  *repo.Repository[outageItem, int64]
}

func openFoProc(addrs []string, env *Env, ns string, acks int) (_ *foProc, err error) {
	p := &foProc{client: redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs,
		DialTimeout: asidekit.RecommendedTimeout, ReadTimeout: asidekit.RecommendedTimeout, WriteTimeout: asidekit.RecommendedTimeout,
		ContextTimeoutEnabled: true})}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	p.kit, err = asidekit.New(asidekit.Config{Namespace: ns, Redis: p.client, DB: env.DB,
		Cache: &cacheaside.Options{ReplicaAcks: acks}})
	if err != nil {
		return nil, err
	}
	p.items, err = repo.New[outageItem, int64](env.DB, p.kit.Cache(), &repo.Options{
		Policy:            cacheaside.Policy{TTL: 10 * time.Minute, Jitter: 0.1, Strategy: cacheaside.Mutex},
		AfterCommitErrors: true,
	})
	return p, err
}

func (p *foProc) close() {
	if p.items != nil {
		_ = p.items.Close()
	}
	if p.kit != nil {
		_ = p.kit.Close()
	}
	_ = p.client.Close()
}

// foTruth is what the writers were told, per row (index id-1).
type foTruth struct {
	done []atomic.Int64   // highest version a write returned with nil
	own  [][]atomic.Int64 // per process: highest version its writes returned (nil or ErrAfterCommit)
	any  []atomic.Int64   // highest version of either
}

func newFoTruth(procs, rows int) *foTruth {
	t := &foTruth{done: make([]atomic.Int64, rows), any: make([]atomic.Int64, rows), own: make([][]atomic.Int64, procs)}
	for i := range t.own {
		t.own[i] = make([]atomic.Int64, rows)
	}
	return t
}

// foRun is one failover row's run.
type foRun struct {
	p      OutageParams
	procs  []*foProc
	truth  *foTruth
	after  atomic.Int64 // UnixNano of the promotion; 0 before
	cut    atomic.Bool  // the replica is cut off
	stale  atomic.Int64 // MetricStaleAfterFailover
	others atomic.Int64 // MetricStaleAfterFailoverOthers
	writes atomic.Int64 // writes acknowledged during the cut
	errs   atomic.Int64 // requests that failed (the dead master)
}

// write raises row id's version through process i.
func (r *foRun) write(ctx context.Context, i int, id int64) error {
	cut := r.cut.Load()
	it, err := r.procs[i].items.Modify(ctx, id, map[string]any{"version": gorm.Expr("version + 1")})
	switch {
	case err == nil:
		raise(&r.truth.done[id-1], it.Version)
	case errors.Is(err, repo.ErrAfterCommit):
	default:
		return err
	}
	raise(&r.truth.own[i][id-1], it.Version)
	raise(&r.truth.any[id-1], it.Version)
	if cut {
		r.writes.Add(1)
	}
	return nil
}

// read reads row id through process i and counts it if it began after
// the promotion and is stale.
func (r *foRun) read(ctx context.Context, i int, id int64) error {
	after := r.after.Load() != 0
	done, own, any := r.truth.done[id-1].Load(), r.truth.own[i][id-1].Load(), r.truth.any[id-1].Load()
	it, err := r.procs[i].items.Get(ctx, id)
	switch {
	case err != nil:
		return err
	case !after:
	case it.Version < max(done, own):
		r.stale.Add(1)
	case it.Version < any:
		r.others.Add(1)
	}
	return nil
}

// runOutageFailover runs one failover row: the workload (80% reads, 20%
// writes through repo) on every process for p.Before; then the first
// master's replica is cut off and every process writes a share of rows it
// had cached (some of them on that master); the master is killed and the
// replica promoted; the workload goes on for p.After and every process
// reads every written row once more.
func runOutageFailover(ctx context.Context, env *Env, p OutageParams, acks int) (Row, error) {
	row := Row{Variant: "failover", Notes: "ReplicaAcks 1 (docs/outages.md's setting on a Cluster with replicas)"}
	if acks == 0 {
		row.Variant, row.Notes = "failover/no_acks", "ReplicaAcks 0 (the default): the master acknowledges invalidations its replica never gets"
	}
	rc, err := testcontainers.StartReplicatedCluster()
	if err != nil {
		return row, fmt.Errorf("%w: %w", errNoCluster, err)
	}
	defer rc.Close()
	if err := seedOutageRows(ctx, env, p.Rows); err != nil {
		return row, err
	}
	r := &foRun{p: p, truth: newFoTruth(p.Instances, p.Rows)}
	defer func() {
		for _, pr := range r.procs {
			pr.close()
		}
	}()
	ns := env.Sub("outage-failover")
	for range p.Instances {
		pr, err := openFoProc(rc.Addrs, env, ns, acks)
		if err != nil {
			return row, err
		}
		r.procs = append(r.procs, pr)
	}
	for i := range r.procs {
		if err := r.warm(ctx, i); err != nil {
			return row, err
		}
	}

	// The workload, until stopped.
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for g := range p.Instances * p.Goroutines {
		i := g % p.Instances
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 29))
			for wctx.Err() == nil {
				id := 1 + rng.Int64N(int64(p.Rows))
				var err error
				if rng.IntN(5) == 0 {
					err = r.write(wctx, i, id)
				} else {
					err = r.read(wctx, i, id)
				}
				if err != nil && wctx.Err() == nil {
					r.errs.Add(1)
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	_ = backoff.Sleep(ctx, p.Before)

	// The rows written right before the failover: cached, and the cache
	// replicated, before the cut.
	master := rc.Nodes[0]
	replica, err := rc.ReplicaOf(ctx, master)
	if err != nil {
		return row, err
	}
	last := lastWrites(p.Rows)
	if _, err := r.procs[0].items.GetMany(ctx, last); err != nil {
		return row, err
	}
	if err := rc.WaitInSync(ctx, master, replica); err != nil {
		return row, err
	}
	if err := rc.CutReplica(ctx, master, replica); err != nil {
		return row, err
	}
	r.cut.Store(true)
	var lw sync.WaitGroup
	lastErr := make([]error, len(r.procs))
	for i := range r.procs {
		lw.Go(func() {
			for k := i; k < len(last) && lastErr[i] == nil; k += len(r.procs) {
				lastErr[i] = r.write(ctx, i, last[k])
			}
		})
	}
	lw.Wait()
	if err := errors.Join(lastErr...); err != nil {
		return row, fmt.Errorf("the writes before the failover: %w", err)
	}

	// The failover.
	killed := time.Now()
	master.Kill()
	r.cut.Store(false)
	if err := replica.Resume(); err != nil {
		return row, err
	}
	if err := rc.Takeover(ctx, replica); err != nil {
		return row, err
	}
	// Every process's client learns of it (go-redis does by itself on a
	// MOVED reply, or within its periodic reload).
	probe, err := rc.KeyOn(ctx, replica)
	if err != nil {
		return row, err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, pr := range r.procs {
		if err := testcontainers.WaitRouted(rctx, pr.client, probe); err != nil {
			return row, fmt.Errorf("routing after the failover: %w", err)
		}
	}
	r.after.Store(time.Now().UnixNano())
	row.Set(MetricFailover, float64(time.Since(killed).Milliseconds()))
	_ = backoff.Sleep(ctx, p.After)
	stop()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return row, err
	}

	// Every process reads every written row once more. A read that fails
	// (a timeout on a starved machine) judged nothing: it is made again,
	// up to three times in all.
	for i := range r.procs {
		for _, id := range last {
			err := r.read(ctx, i, id)
			for try := 1; err != nil && try < 3 && ctx.Err() == nil; try++ {
				err = r.read(ctx, i, id)
			}
			if err != nil {
				return row, fmt.Errorf("the last reads: %w", err)
			}
		}
	}
	row.Set(MetricStaleAfterFailover, float64(r.stale.Load()))
	row.Set(MetricStaleAfterFailoverOthers, float64(r.others.Load()))
	row.Set(MetricWritesCut, float64(r.writes.Load()))
	row.Set(MetricErrorsDuring, float64(r.errs.Load()))
	return row, nil
}

// warm has process i read every row once.
func (r *foRun) warm(ctx context.Context, i int) error {
	for lo := 1; lo <= r.p.Rows; lo += 500 {
		ids := make([]int64, 0, 500)
		for id := lo; id < lo+500 && id <= r.p.Rows; id++ {
			ids = append(ids, int64(id))
		}
		if _, err := r.procs[i].items.GetMany(ctx, ids); err != nil {
			return err
		}
	}
	return nil
}

// lastWrites are the rows written right before the failover: 30 rows
// spread over the table, so that about a third are on each master.
func lastWrites(rows int) []int64 {
	n := min(30, rows)
	ids := make([]int64, n)
	for k := range ids {
		ids[k] = 1 + int64(k*rows/n)
	}
	return ids
}
