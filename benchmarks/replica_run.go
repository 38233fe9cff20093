package benchmarks

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// replicaItem is the replica scenario's row: every write bumps Version.
type replicaItem struct {
	ID      int64  `gorm:"primaryKey;autoIncrement:false" json:"id"`
	Version int64  `gorm:"not null" json:"version"`
	Pad     string `gorm:"size:200;not null" json:"pad"`
}

func (replicaItem) TableName() string { return "asidebench_replica_items" }

// replicaAck is a write acknowledged to its writer: the version it made.
type replicaAck struct {
	version int64
	at      time.Time
}

// replicaRow is what the writers acknowledged on one row.
type replicaRow struct {
	mu   sync.Mutex
	acks []replicaAck // in the order acknowledged
}

// newest returns the highest version acknowledged at or before t (1, the
// seeded one, when none was).
func (r *replicaRow) newest(t time.Time) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := int64(1)
	for _, a := range r.acks {
		if !a.at.After(t) {
			v = max(v, a.version)
		}
	}
	return v
}

func (r *replicaRow) ack(version int64, at time.Time) {
	r.mu.Lock()
	r.acks = append(r.acks, replicaAck{version, at})
	r.mu.Unlock()
}

// replicaEntry is one version of one row.
type replicaEntry struct{ id, version int64 }

// replicaRun is one variant's shared state.
type replicaRun struct {
	base int64
	rows []replicaRow // by id - base - 1

	mu         sync.Mutex
	staleLoads map[replicaEntry]bool // loaded older than a write acknowledged before the load began
	served     map[replicaEntry]bool // returned to a read that did not load

	reads, stale, stale1s, errs atomic.Int64
}

func (rr *replicaRun) row(id int64) *replicaRow { return &rr.rows[id-rr.base-1] }

// probeKey marks a read's context: the load callback sets its flag when
// the read's own load ran.
type probeKey struct{}

const loadStartKey = "asidebench:replica_load_start"

// watchLoads installs callbacks on db's query chain that check every load
// of the scenario's table against the versions acknowledged before it
// began, and mark the read that ran it.
func (rr *replicaRun) watchLoads(db *gorm.DB) error {
	table := replicaItem{}.TableName()
	before := func(db *gorm.DB) {
		if db.Statement.Table == table {
			db.InstanceSet(loadStartKey, time.Now())
		}
	}
	after := func(db *gorm.DB) {
		if db.Statement.Table != table || db.Error != nil || db.Statement.Context == nil {
			return
		}
		start, ok := db.InstanceGet(loadStartKey)
		if !ok {
			return
		}
		if loaded, _ := db.Statement.Context.Value(probeKey{}).(*atomic.Bool); loaded != nil {
			loaded.Store(true)
		}
		rv := reflect.Indirect(db.Statement.ReflectValue)
		check := func(v reflect.Value) {
			it, ok := reflect.Indirect(v).Interface().(replicaItem)
			if !ok || it.ID <= rr.base || it.ID > rr.base+int64(len(rr.rows)) {
				return
			}
			if it.Version < rr.row(it.ID).newest(start.(time.Time)) {
				rr.mu.Lock()
				rr.staleLoads[replicaEntry{it.ID, it.Version}] = true
				rr.mu.Unlock()
			}
		}
		switch rv.Kind() {
		case reflect.Slice:
			for i := 0; i < rv.Len(); i++ {
				check(rv.Index(i))
			}
		case reflect.Struct:
			check(rv)
		}
	}
	q := db.Callback().Query()
	if err := q.Before("gorm:query").Register("asidebench:replica_before", before); err != nil {
		return err
	}
	return q.After("gorm:query").Register("asidebench:replica_after", after)
}

// replicaProc is one simulated process.
type replicaProc struct {
	db      *gorm.DB
	routing *dbresolver.DBResolver // registered on db in the replica variants
	cache   *cacheaside.Cache
	items   *repo.Repository[replicaItem, int64]
}

func (p *replicaProc) close() {
	if p.items != nil {
		_ = p.items.Close()
	}
	if p.cache != nil {
		_ = p.cache.Close()
	}
	if p.routing != nil {
		// dbresolver's replica pool is its own: closing db's does not
		// close it.
		_ = p.routing.Call(func(pool gorm.ConnPool) error {
			if c, ok := pool.(io.Closer); ok {
				_ = c.Close()
			}
			return nil
		})
	}
	if s, err := p.db.DB(); err == nil {
		_ = s.Close()
	}
}

// runReplicaVariant runs v on rows base+1 … base+Rows of its own.
func runReplicaVariant(ctx context.Context, env *Env, sr *testcontainers.StreamingReplica, p ReplicaParams, v replicaVariant, base int64) (Row, error) {
	var row Row
	if v.naive {
		testswitch.ReplicaLSNOff.Store(true)
		defer testswitch.ReplicaLSNOff.Store(false)
	}
	err := sr.Primary.DB.WithContext(ctx).Exec(`INSERT INTO asidebench_replica_items (id, version, pad)
		SELECT i, 1, repeat('x', 150) FROM generate_series(?::bigint, ?::bigint) i`, base+1, base+int64(p.Rows)).Error
	if err != nil {
		return row, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	err = sr.WaitReplayed(wctx) // the replica has every row before the reads begin
	cancel()
	if err != nil {
		return row, err
	}
	rr := &replicaRun{base: base, rows: make([]replicaRow, p.Rows),
		staleLoads: map[replicaEntry]bool{}, served: map[replicaEntry]bool{}}
	ns := env.Sub("replica-" + v.name)
	procs := make([]*replicaProc, p.Instances)
	defer func() {
		for _, pr := range procs {
			if pr != nil {
				pr.close()
			}
		}
	}()
	for i := range procs {
		db, err := gorm.Open(postgres.Open(sr.Primary.DSN), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
		if err != nil {
			return row, err
		}
		pr := &replicaProc{db: db}
		procs[i] = pr
		if v.replica {
			pr.routing = dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{postgres.Open(sr.ReplicaDSN)}})
			if err := db.Use(pr.routing); err != nil {
				return row, err
			}
		}
		if err := rr.watchLoads(db); err != nil {
			return row, err
		}
		if pr.cache, err = cacheaside.New(env.NewClient(), &cacheaside.Options{Namespace: ns}); err != nil {
			return row, err
		}
		if pr.items, err = repo.New[replicaItem, int64](db, pr.cache, &repo.Options{Policy: cacheaside.Policy{TTL: 10 * time.Minute}}); err != nil {
			return row, err
		}
	}

	// Steady state, not a cold start: every row read once before the
	// measured phase, so that its version records a position (an id's first
	// load after its version is gone runs on the primary: docs/replicas.md).
	warm, err := warmReplicaRows(ctx, procs, base, p.Rows)
	if err != nil {
		return row, err
	}

	pick := func(r *rand.Rand, hotShare float64) int64 {
		if r.Float64() < hotShare {
			return base + 1 + r.Int64N(int64(p.Hot))
		}
		return base + 1 + r.Int64N(int64(p.Rows))
	}
	lat := newLatencies(p.Instances * p.Goroutines)
	end := time.Now().Add(p.Duration)
	var wg sync.WaitGroup
	for i, pr := range procs {
		for g := 0; g < p.Goroutines; g++ {
			w := i*p.Goroutines + g
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), uint64(base)))
				for time.Now().Before(end) && ctx.Err() == nil {
					id := pick(r, 0.8)
					start := time.Now()
					need, need1s := rr.row(id).newest(start), rr.row(id).newest(start.Add(-time.Second))
					var loaded atomic.Bool
					it, err := pr.items.Get(context.WithValue(ctx, probeKey{}, &loaded), id)
					d := time.Since(start)
					if err != nil {
						rr.errs.Add(1)
						continue
					}
					rr.reads.Add(1)
					if loaded.Load() {
						lat.add(w, d)
					} else {
						rr.mu.Lock()
						rr.served[replicaEntry{id, it.Version}] = true
						rr.mu.Unlock()
					}
					if it.Version < need {
						rr.stale.Add(1)
					}
					if it.Version < need1s {
						rr.stale1s.Add(1)
					}
				}
			})
		}
	}
	writers := max(2, p.Instances)
	var writes atomic.Int64
	for k := 0; k < writers; k++ {
		pr := procs[k%len(procs)]
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(1000+k), uint64(base)))
			interval := time.Duration(writers) * time.Second / time.Duration(p.WriteRate)
			next := time.Now().Add(time.Duration(k) * interval / time.Duration(writers))
			for ctx.Err() == nil {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				next = next.Add(interval)
				if !time.Now().Before(end) {
					return
				}
				id := pick(r, 0.7)
				it, err := pr.items.Modify(ctx, id, map[string]any{"version": gorm.Expr("version + 1")})
				if err != nil {
					rr.errs.Add(1)
					continue
				}
				rr.row(id).ack(it.Version, time.Now())
				writes.Add(1)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return row, err
	}

	var replicaLoads, primaryLoads, lagged, unknown int64
	for i, pr := range procs {
		s := pr.items.ReadStats()
		replicaLoads += s.ReplicaLoads - warm[i].ReplicaLoads
		primaryLoads += s.PrimaryLoads - warm[i].PrimaryLoads
		lagged += s.RedirectedLag - warm[i].RedirectedLag
		unknown += s.RedirectedUnknown - warm[i].RedirectedUnknown
	}
	row.Set(MetricRedirectedLag, float64(lagged))
	row.Set(MetricRedirectedUnknown, float64(unknown))
	fills := 0
	for e := range rr.staleLoads {
		if rr.served[e] {
			fills++
		}
	}
	row.Set(MetricReads, float64(rr.reads.Load()))
	row.Set(MetricWrites, float64(writes.Load()))
	row.Set(MetricErrors, float64(rr.errs.Load()))
	row.Set(MetricStaleLoads, float64(len(rr.staleLoads)))
	row.Set(MetricStaleFills, float64(fills))
	row.Set(MetricStaleReads, float64(rr.stale.Load()))
	row.Set(MetricStaleReadsAfter1s, float64(rr.stale1s.Load()))
	share := 0.0
	if n := replicaLoads + primaryLoads; n > 0 {
		share = float64(primaryLoads) / float64(n)
	}
	row.Set(MetricPrimaryLoadShare, share)
	row.Set(MetricDBLoads, float64(replicaLoads+primaryLoads))
	s := lat.sorted()
	row.Set(MetricMissP50, ms(quantile(s, 0.5)))
	row.Set(MetricMissP99, ms(quantile(s, 0.99)))
	return row, nil
}

// warmReplicaRows reads rows base+1 … base+n once through the first
// process (GetMany, 200 ids a call) and returns each process's ReadStats
// after it, the baseline of the measured phase.
func warmReplicaRows(ctx context.Context, procs []*replicaProc, base int64, n int) ([]repo.ReadStats, error) {
	ids := make([]int64, 0, 200)
	for id := base + 1; id <= base+int64(n); id++ {
		ids = append(ids, id)
		if len(ids) == cap(ids) || id == base+int64(n) {
			if _, err := procs[0].items.GetMany(ctx, ids); err != nil {
				return nil, fmt.Errorf("warm the cache: %w", err)
			}
			ids = ids[:0]
		}
	}
	stats := make([]repo.ReadStats, len(procs))
	for i, pr := range procs {
		stats[i] = pr.items.ReadStats()
	}
	return stats, nil
}
