package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// Metrics of the skew scenario (with requests, writes, ratio, p50_ms,
// p99_ms, db_loads, stale_reads, stale_reads_after_window, staleness_max_ms
// and errors).
const (
	MetricReadsPerSec   = "reads_per_sec"
	MetricLocalHitRatio = "local_hit_ratio"
	MetricLocalBytes    = "local_bytes"
	MetricLocalBudget   = "local_budget_bytes"
	// MetricWriteShare is the share of the callers' time spent in writes:
	// each caller waits for its writes, so reads/s cannot pass what the
	// writes leave.
	MetricWriteShare = "write_time_share"
)

// DefaultSkewWindow is SkewParams.Window's default: ten times the longest
// propagation delay of a near cache's invalidation that docs/near-cache.md
// reports (9.8 ms, on a loaded machine), so that a busy 2-core machine,
// where the invalidation's reader waits its turn behind 64 callers, is
// not mistaken for a lost invalidation.
const DefaultSkewWindow = 100 * time.Millisecond

// skewBase is the users id below the first row of the skew scenario
// (ids skewBase+1 … skewBase+Rows): apart from the rows other scenarios
// seed and write (local_invalidation's start at localRepoBase).
const skewBase = 800_000_000

// SkewParams size the skew scenario. Every zero field has a default.
type SkewParams struct {
	// Instances processes (default 4) of Goroutines callers (default 16).
	Load
	// Rows is the keyspace: users rows read and written. Default 100,000.
	Rows int `json:"rows"`
	// S is the exponent of the Zipf distribution of the keys (key of rank
	// r drawn with probability ∝ r^-S). Default DefaultZipfS (1.1) when
	// not above 1.
	S float64 `json:"zipf_s"`
	// WritePercent is the share of operations that are writes through the
	// repository (Update). Default 1; negative: no writes.
	WritePercent float64 `json:"write_percent"`
	// Warmup is how long each variant runs the workload unmeasured first,
	// so that the hot keys are cached (and promoted). Default 1s.
	Warmup time.Duration `json:"warmup"`
	// Duration is how long each variant is measured. Default 5s.
	Duration time.Duration `json:"duration"`
	// Window is how long after a write returned a read of its key may
	// still answer the older version (the near cache's propagation delay);
	// a read begun later that does counts in stale_reads_after_window.
	// Default DefaultSkewWindow.
	Window time.Duration `json:"window"`
	// LocalTTL and LocalEntries are local_configured's Policy.Local TTL
	// and MaxEntries. Default 10s (as HotKeyPolicy.TTL) and 10,000 (as
	// LocalPolicy.MaxEntries).
	LocalTTL     time.Duration `json:"local_ttl"`
	LocalEntries int           `json:"local_max_entries"`
	// Budget and MinReads are auto's HotKeyPolicy.Budget (per process)
	// and MinReads. Default 16 MiB and the library's default (0).
	Budget   int64 `json:"budget_bytes"`
	MinReads int   `json:"min_reads,omitempty"`
}

func (p SkewParams) norm() SkewParams {
	if p.Instances <= 0 {
		p.Instances = 4
	}
	if p.Goroutines <= 0 {
		p.Goroutines = 16
	}
	if p.Rows <= 0 {
		p.Rows = 100_000
	}
	if p.S <= 1 {
		p.S = DefaultZipfS
	}
	if p.WritePercent == 0 {
		p.WritePercent = 1
	}
	if p.Warmup <= 0 {
		p.Warmup = time.Second
	}
	if p.Duration <= 0 {
		p.Duration = 5 * time.Second
	}
	if p.Window <= 0 {
		p.Window = DefaultSkewWindow
	}
	if p.LocalTTL <= 0 {
		p.LocalTTL = cacheaside.DefaultHotKeyTTL
	}
	if p.LocalEntries <= 0 {
		p.LocalEntries = cacheaside.DefaultLocalMaxEntries
	}
	if p.Budget <= 0 {
		p.Budget = cacheaside.DefaultHotKeyBudget
	}
	return p
}

// skewVariant is one row of the skew scenario.
type skewVariant struct{ name, notes string }

var skewVariants = []skewVariant{
	{"redis_only", "no near cache: every read a Redis GET (or a load)"},
	{"local_configured", "Policy.Local on the entity (client tracking)"},
	{"auto", "Options.HotKeys: hot keys promote themselves (client tracking)"},
}

// RunSkew measures a fleet reading a skewed keyspace through repositories:
// p.Instances processes (each its own Redis client, Cache and
// repo.Repository of users) × p.Goroutines callers draw keys from a
// Zipf(p.S) distribution over p.Rows rows; p.WritePercent of the
// operations Update the row (its name carries a version), the rest Get it.
// Per variant, once every row was read (cached in Redis) and after
// p.Warmup, it measures for p.Duration: reads_per_sec, p50_ms/p99_ms of
// reads, write_time_share, db_loads (the repositories' loads),
// local_hit_ratio, local_bytes (summed over the processes at the end,
// next to the budget), and the reads that answered an older version than
// a write of their key that had returned before they began: stale_reads
// (the oldest one's age in staleness_max_ms), of which
// stale_reads_after_window began more than p.Window after that write
// returned (must be 0); those and errors count over the warm-up too.
// Needs client tracking: not on miniredis.
func RunSkew(ctx context.Context, env *Env, p SkewParams) (Result, error) {
	p = p.norm()
	res := Result{Scenario: "skew", Backend: env.Backend, Params: paramsMap(p)}
	if env.EmbeddedRedis {
		res.Notes = append(res.Notes, "skipped: miniredis has no client tracking")
		return res, nil
	}
	if err := seedSkew(ctx, env, p.Rows); err != nil {
		return res, err
	}
	keys := newSkewKeys(p.Rows)
	for _, v := range skewVariants {
		row, err := runSkewVariant(ctx, env, p, v, keys)
		if err != nil {
			return res, fmt.Errorf("skew: %s: %w", v.name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	base, _ := res.Rows[0].Get(MetricReadsPerSec)
	for i := range res.Rows {
		r, _ := res.Rows[i].Get(MetricReadsPerSec)
		res.Rows[i].Set(MetricRatio, r/max(base, 1e-9))
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d processes × %d goroutines, Zipf(%g) over %d users rows, %g%% writes (repo Update); "+
		"every row read once, then %v warm-up (its stale reads and errors count too), then %v measured per variant; ratio: reads_per_sec over redis_only's; window %v", p.Instances, p.Goroutines,
		p.S, p.Rows, p.WritePercent, p.Warmup, p.Duration, p.Window),
		"db_loads: the repositories' loader calls; local_bytes: the automatic tiers' estimate (a Policy.Local tier reports none); "+
			"local_budget_bytes: HotKeys.Budget × processes")
	return res, nil
}

// seedSkew writes users rows 1..rows of the scenario at version 0 (a
// previous run's rows are overwritten).
func seedSkew(ctx context.Context, env *Env, rows int) error {
	tr := env.track("seed skew users", int64(rows))
	defer tr.Done()
	const batch = 1000
	upsert := clause.OnConflict{Columns: []clause.Column{{Name: "id"}}, DoUpdates: clause.AssignmentColumns([]string{"name"})}
	for lo := 0; lo < rows; lo += batch {
		us := make([]sample.User, 0, batch)
		for k := lo; k < min(lo+batch, rows); k++ {
			us = append(us, *skewUser(k, 0))
		}
		if err := env.DB.WithContext(ctx).Clauses(upsert).Create(&us).Error; err != nil {
			return fmt.Errorf("skew: seed users: %w", err)
		}
		tr.Add(int64(len(us)))
	}
	return nil
}

// skewID is key k's users id.
func skewID(k int) int64 { return int64(skewBase + 1 + k) }

// skewUser is key k's row at version ver (the version is its name).
func skewUser(k int, ver int64) *sample.User {
	id := skewID(k)
	return &sample.User{ID: id, Email: fmt.Sprintf("skew-%d@example.com", id), Name: strconv.FormatInt(ver, 10)}
}

// skewProc is one simulated process.
type skewProc struct {
	cache *cacheaside.Cache
	users *repo.Repository[sample.User, int64]
}

// openSkewProc opens a process of variant v in namespace ns, once its near
// cache (if any) may serve.
func openSkewProc(ctx context.Context, env *Env, ns string, p SkewParams, v skewVariant) (skewProc, error) {
	opts := cacheaside.Options{Namespace: ns}
	pol := cacheaside.Policy{TTL: time.Hour, Strategy: cacheaside.SingleFlight}
	switch v.name {
	case "local_configured":
		pol.Local = &cacheaside.LocalPolicy{TTL: p.LocalTTL, MaxEntries: p.LocalEntries}
	case "auto":
		opts.HotKeys = &cacheaside.HotKeyPolicy{Budget: p.Budget, MinReads: p.MinReads}
	}
	c, err := cacheaside.New(env.NewClient(), &opts)
	if err != nil {
		return skewProc{}, err
	}
	users, err := repo.New[sample.User, int64](env.DB, c, &repo.Options{Name: "user", Policy: pol})
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = c.WaitLocal(wctx)
		cancel()
	}
	if err != nil {
		_ = c.Close()
		return skewProc{}, err
	}
	return skewProc{c, users}, nil
}

func runSkewVariant(ctx context.Context, env *Env, p SkewParams, v skewVariant, keys *skewKeys) (Row, error) {
	ns := env.Sub("skew-" + v.name + "-" + randomHex(3)) // no entry of an earlier run
	procs := make([]skewProc, p.Instances)
	for i := range procs {
		pr, err := openSkewProc(ctx, env, ns, p, v)
		if err != nil {
			return Row{}, err
		}
		defer pr.cache.Close()
		procs[i] = pr
	}
	if err := fillSkew(ctx, procs, p.Rows); err != nil {
		return Row{}, err
	}
	stop := env.trackTime("skew "+v.name, p.Warmup+p.Duration)
	defer stop()
	warm, _ := runSkewPhase(ctx, p, procs, keys, p.Warmup)
	before := sumSkewStats(procs)
	c, elapsed := runSkewPhase(ctx, p, procs, keys, p.Duration)
	// The warm-up's stale reads and errors count too: only its speed is
	// not measured.
	c.errs, c.stale, c.after, c.maxAge = c.errs+warm.errs, c.stale+warm.stale, c.after+warm.after, max(c.maxAge, warm.maxAge)
	st := sumSkewStats(procs)
	row := Row{Variant: v.name, Notes: v.notes}
	row.Set(MetricRequests, float64(c.hist.n))
	row.Set(MetricWrites, float64(c.writes))
	row.Set(MetricReadsPerSec, float64(c.hist.n)/elapsed.Seconds())
	row.Set(MetricP50, ms(c.hist.quantile(0.5)))
	row.Set(MetricP99, ms(c.hist.quantile(0.99)))
	row.Set(MetricWriteShare, float64(c.writeTime)/float64(elapsed*time.Duration(len(procs)*p.Goroutines)))
	row.Set(MetricDBLoads, float64(st.Loads+st.LoadErrors-before.Loads-before.LoadErrors))
	hits, misses := st.LocalHits-before.LocalHits, st.LocalMisses-before.LocalMisses
	row.Set(MetricLocalHitRatio, float64(hits)/float64(max(hits+misses, 1)))
	row.Set(MetricStaleReads, float64(c.stale))
	row.Set(MetricStaleAfter, float64(c.after))
	row.Set(MetricStaleMax, ms(c.maxAge))
	row.Set(MetricLocalBytes, float64(st.LocalBytes))
	budget := int64(0)
	if v.name == "auto" {
		budget = p.Budget * int64(p.Instances)
	}
	row.Set(MetricLocalBudget, float64(budget))
	row.Set(MetricErrors, float64(c.errs))
	return row, ctx.Err()
}

// fillSkew reads every row once, in batches shared out among the
// processes: the keyspace is in Redis before the warm-up, as in a service
// that has run a while, so that the measured DB loads are the reloads
// after writes, not the first reads of a long tail that every variant
// would pay alike.
func fillSkew(ctx context.Context, procs []skewProc, rows int) error {
	const batch = 500
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, pr := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for lo := i * batch; lo < rows && errs[i] == nil; lo += len(procs) * batch {
				ids := make([]int64, 0, batch)
				for k := lo; k < min(lo+batch, rows); k++ {
					ids = append(ids, skewID(k))
				}
				_, errs[i] = pr.users.GetMany(ctx, ids)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	return nil
}

// sumSkewStats adds up the processes' Stats (LocalBytes: now).
func sumSkewStats(procs []skewProc) cacheaside.Stats {
	var s cacheaside.Stats
	for _, pr := range procs {
		t := pr.users.Stats()
		s.Loads, s.LoadErrors = s.Loads+t.Loads, s.LoadErrors+t.LoadErrors
		s.LocalHits, s.LocalMisses = s.LocalHits+t.LocalHits, s.LocalMisses+t.LocalMisses
		s.LocalBytes += t.LocalBytes
	}
	return s
}

// skewCounts is what the callers of a phase counted.
type skewCounts struct {
	hist                       latHist // of reads
	writes, errs, stale, after int64
	maxAge                     time.Duration // the oldest stale read's age
	writeTime                  time.Duration // the callers' time in writes
}

func (c *skewCounts) merge(o *skewCounts) {
	c.hist.merge(&o.hist)
	c.writes, c.errs, c.stale, c.after = c.writes+o.writes, c.errs+o.errs, c.stale+o.stale, c.after+o.after
	c.writeTime += o.writeTime
	c.maxAge = max(c.maxAge, o.maxAge)
}

// runSkewPhase runs the workload for d and returns its counts and how
// long it took.
func runSkewPhase(ctx context.Context, p SkewParams, procs []skewProc, keys *skewKeys, d time.Duration) (skewCounts, time.Duration) {
	counts := make([]skewCounts, p.Instances*p.Goroutines)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range counts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			users, c := procs[i/p.Goroutines].users, &counts[i]
			get := users.Get
			seed := uint64(start.UnixNano()) + uint64(i)
			zipf, rng := newZipfKeys(p.Rows, p.S, seed), rand.New(rand.NewPCG(seed, 0))
			for now := start; now.Before(deadline) && ctx.Err() == nil; now = time.Now() {
				k := zipf.next()
				if rng.Float64()*100 < p.WritePercent {
					c.writes++
					if err := keys.write(k, func(ver int64) error { return users.Update(ctx, skewUser(k, ver)) }); err != nil {
						c.errs++
					}
					c.writeTime += time.Since(now)
					continue
				}
				skewRead(ctx, get, keys, k, p.Window, c)
			}
		}()
	}
	wg.Wait()
	var all skewCounts
	for i := range counts {
		all.merge(&counts[i])
	}
	return all, time.Since(start)
}

// skewRead reads key k and judges the version it answered.
func skewRead(ctx context.Context, get func(context.Context, int64) (sample.User, error), keys *skewKeys, k int, window time.Duration, c *skewCounts) {
	b := time.Now()
	u, err := get(ctx, skewID(k))
	c.hist.add(time.Since(b))
	var ver int64
	if err == nil {
		ver, err = strconv.ParseInt(u.Name, 10, 64)
	}
	if err != nil {
		c.errs++
		return
	}
	if age := keys.age(k, ver, b); age >= 0 {
		c.stale++
		c.maxAge = max(c.maxAge, age)
		if age > window {
			c.after++
		}
	}
}
