package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// embeddedRedisTimeout bounds the generators' Redis calls on the embedded
// backend.
const embeddedRedisTimeout = 5 * time.Second

// seqVariant issues serials: next returns the ids of one call.
type seqVariant struct {
	name, notes string
	// open returns instance i's issuing function and its cleanup.
	open func(i int) (next func(ctx context.Context) ([]string, error), closeFn func(), err error)
	// midway, if set, runs once when half of the ids are issued.
	midway func(ctx context.Context) error
}

// RunSeqgen issues p.Ops serials per variant from p.Instances ×
// p.Goroutines goroutines: seqgen's Next (one Generator per process; the
// concurrent calls of a process join in one Redis round trip), Next with
// joining off (Options.MaxBatch 1: one round trip per id), NextN in
// batches of p.Batch, Next with the Redis keys deleted halfway (the
// generators re-seed from the DB mark), and the database's own sequence
// (nextval on PostgreSQL, an UPDATE … RETURNING counter row on SQLite).
// Rows report ids_per_sec, ratio (ids_per_sec over nextval's in the same
// run), duplicates, requests, errors, latencies, db_loads and
// redis_round_trips.
func RunSeqgen(ctx context.Context, env *Env, p SeqgenParams) (Result, error) {
	p.Ops = max(p.Ops, 1)
	p.Batch = max(p.Batch, 1)
	res := Result{Scenario: "seqgen", Backend: env.Backend, Params: paramsMap(p)}
	gen := func(ns, biz string, batch, maxBatch int) func(i int) (func(context.Context) ([]string, error), func(), error) {
		return func(int) (func(context.Context) ([]string, error), func(), error) {
			opts := &seqgen.Options{Namespace: ns, Width: 9, MaxBatch: maxBatch}
			if env.EmbeddedRedis {
				// miniredis runs in this process: a late reply means a
				// starved scheduler, not a Redis down, and the fallback
				// to SQLite would measure SQLite's write lock instead.
				opts.RedisTimeout = embeddedRedisTimeout
			}
			g, err := seqgen.New(env.NewClient(), env.DB, opts)
			if err != nil {
				return nil, nil, err
			}
			next := func(ctx context.Context) ([]string, error) {
				s, err := g.Next(ctx, biz)
				return []string{s}, err
			}
			if batch > 1 {
				next = func(ctx context.Context) ([]string, error) { return g.NextN(ctx, biz, batch) }
			}
			return next, func() { _ = g.Close() }, nil
		}
	}
	lostNS := env.Sub("seqgen_keys_lost")
	variants := []seqVariant{
		{name: "seqgen", notes: "Generator.Next: a process's concurrent calls join in one Redis round trip, DB segments reserved ahead", open: gen(env.Sub("seqgen"), "ORD", 1, 0)},
		{name: "seqgen_unbatched", notes: "Next with MaxBatch 1: one Redis round trip per id", open: gen(env.Sub("seqgen_unbatched"), "ORDU", 1, 1)},
		{name: "seqgen_nextn", notes: fmt.Sprintf("Generator.NextN(%d)", p.Batch), open: gen(env.Sub("seqgen_nextn"), "ORDN", p.Batch, 0)},
		{name: "seqgen_keys_lost", notes: "Next, with the Redis keys deleted halfway: re-seeded from the DB mark", open: gen(lostNS, "ORDK", 1, 0),
			midway: func(ctx context.Context) error { return testcontainers.DeleteNamespace(ctx, env.admin, lostNS) }},
		{name: "nextval", notes: "the database's own sequence, one statement per id", open: env.dbSequence},
	}
	if env.EmbeddedRedis {
		res.Notes = append(res.Notes, embeddedSeqgenNote)
	}
	for _, v := range variants {
		row, err := runSeqVariant(ctx, env, p, v)
		if err != nil {
			return res, fmt.Errorf("seqgen: %s: %w", v.name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	setSeqRatios(res.Rows)
	return res, nil
}

// setSeqRatios gives each row a ratio, next to its ids_per_sec: that over
// nextval's.
func setSeqRatios(rows []Row) {
	var base float64
	for _, r := range rows {
		if r.Variant == "nextval" {
			base, _ = r.Get(MetricIDsPerSec)
		}
	}
	if base <= 0 {
		return
	}
	for i := range rows {
		ms := rows[i].Metrics
		at := slices.IndexFunc(ms, func(m Metric) bool { return m.Name == MetricIDsPerSec })
		if at >= 0 {
			rows[i].Metrics = slices.Insert(ms, at+1, Metric{MetricRatio, ms[at].Value / base})
		}
	}
}

func runSeqVariant(ctx context.Context, env *Env, p SeqgenParams, v seqVariant) (Row, error) {
	row := Row{Variant: v.name, Notes: v.notes}
	l := p.Load.norm()
	nexts := make([]func(context.Context) ([]string, error), l.Instances)
	for i := range nexts {
		next, closeFn, err := v.open(i)
		if err != nil {
			return row, err
		}
		defer closeFn()
		nexts[i] = next
	}
	workers := l.Instances * l.Goroutines
	got := make([][]string, workers)
	lat := newLatencies(workers)
	var issued, calls, errs atomic.Int64
	var firstErr atomic.Pointer[error]
	var once sync.Once
	var midErr error
	tr := env.track("seqgen "+v.name, int64(p.Ops))
	before := env.Counts()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		next := nexts[w/l.Goroutines]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && issued.Load() < int64(p.Ops) {
				if v.midway != nil && issued.Load() >= int64(p.Ops/2) {
					once.Do(func() { midErr = v.midway(ctx) })
				}
				t := time.Now()
				ids, err := next(ctx)
				lat.add(w, time.Since(t))
				calls.Add(1)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
					continue
				}
				got[w] = append(got[w], ids...)
				issued.Add(int64(len(ids)))
				tr.Add(int64(len(ids)))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := env.Counts()
	tr.Done()
	if err := ctx.Err(); err != nil {
		return row, err
	}
	if midErr != nil {
		return row, midErr
	}
	seen := make(map[string]struct{}, issued.Load())
	dups := 0
	for _, ids := range got {
		for _, id := range ids {
			if _, ok := seen[id]; ok {
				dups++
			}
			seen[id] = struct{}{}
		}
	}
	row.Set("ids", float64(issued.Load()))
	row.Set(MetricIDsPerSec, float64(issued.Load())/elapsed.Seconds())
	row.Set(MetricDuplicates, float64(dups))
	row.Set(MetricRequests, float64(calls.Load()))
	row.Set(MetricErrors, float64(errs.Load()))
	setLatency(&row, lat)
	row.Set(MetricDBLoads, float64(after.DBStatements-before.DBStatements))
	row.Set(MetricRedisRoundTrips, float64(after.RedisRoundTrips-before.RedisRoundTrips))
	if e := firstErr.Load(); e != nil {
		row.Notes += fmt.Sprintf(" (first error: %v)", *e)
	}
	return row, nil
}

// dbSequence opens the nextval baseline: a PostgreSQL sequence, or on
// SQLite a one-row counter table bumped with UPDATE … RETURNING.
func (e *Env) dbSequence(int) (func(context.Context) ([]string, error), func(), error) {
	if e.EmbeddedDB {
		if err := e.DB.Exec("CREATE TABLE IF NOT EXISTS asidebench_seq (id INTEGER PRIMARY KEY, v INTEGER NOT NULL)").Error; err != nil {
			return nil, nil, err
		}
		if err := e.DB.Exec("INSERT OR IGNORE INTO asidebench_seq (id, v) VALUES (1, 0)").Error; err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) ([]string, error) {
			var v int64
			err := e.DB.WithContext(ctx).Raw("UPDATE asidebench_seq SET v = v + 1 WHERE id = 1 RETURNING v").Scan(&v).Error
			return []string{strconv.FormatInt(v, 10)}, err
		}, func() {}, nil
	}
	if err := e.DB.Exec("CREATE SEQUENCE IF NOT EXISTS asidebench_seq").Error; err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) ([]string, error) {
		var v int64
		err := e.DB.WithContext(ctx).Raw("SELECT nextval('asidebench_seq')").Scan(&v).Error
		return []string{strconv.FormatInt(v, 10)}, err
	}, func() {}, nil
}
