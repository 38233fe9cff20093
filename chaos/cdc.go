package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// The CDC phase (DESIGN.md, "Features combine": lists × CDC, write-through
// × CDC): plain-SQL writes that only repo/cdc sees, write-through
// repository writes of the same rows, Get and list reads from every
// process, on a private PostgreSQL with wal_level=logical. cdc_work.go is
// its workload, cdc_check.go its check.

// The CDC phase's sizes: its rows (ids from cdcBase, cdcLive of them
// present at the start), their groups (1 … cdcGroups), the slot all its
// processes share, and the delay of every chunk on the link of the
// process whose repository makes the pairs' repository writes (cdcSlow),
// so that their write-through stores land after the Invalidator applied
// the plain-SQL write that committed after them.
const (
	cdcBase   = 70_000
	cdcRows   = 12
	cdcLive   = 10
	cdcGroups = 3
	cdcSlot   = "chaos_cdc"
	cdcSlow   = 25 * time.Millisecond
)

// CDCItem is the row of the CDC phase: a member of group Grp, listed by
// Touched (a timestamptz, newest first) and by Rank, soft-deleted through
// DeletedAt, and versioned as Item is.
type CDCItem struct {
	ID        int64          `gorm:"primaryKey;autoIncrement:false" json:"id"`
	Grp       int64          `gorm:"not null;index" json:"grp"`
	Touched   time.Time      `gorm:"type:timestamptz;not null" json:"touched"`
	Rank      int64          `gorm:"not null" json:"rank"`
	Version   int64          `gorm:"not null" json:"version"`
	DeletedAt gorm.DeletedAt `gorm:"index" json:"deleted_at"`
}

// TableName is the table of CDCItem.
func (CDCItem) TableName() string { return "chaos_cdc_items" }

// cdcPhase is the outcome of the CDC phase.
type cdcPhase struct {
	strategy cacheaside.Strategy
	ops      []Op // the phase's history
	reads    int  // Get reads checked
	lists    int  // list reads checked
	pairs    int  // concurrent repository + plain-SQL writes of one row
	readVs   []Violation
	listVs   []Violation
	stats    cdc.Stats // summed over the processes' Invalidators
	errs     counts
	err      error // the phase could not run
}

// cdcProc is one process of the phase: its pool on the logical server,
// its Cache on the run's cache Redis through a proxy of its own, a
// write-through repository with the two cached queries, and its
// Invalidator on the shared slot.
type cdcProc struct {
	id     int
	link   *faultproxy.Proxy
	db     *gorm.DB
	rdb    *redis.Client
	cache  *cacheaside.Cache
	items  *repo.Repository[CDCItem, int64]
	byTime *repo.Query[CDCItem, int64] // grp, touched DESC
	byRank *repo.Query[CDCItem, int64] // grp, rank
	inv    *cdc.Invalidator
	stop   func() // ends the Invalidator's Run and waits for it
}

// cdcDuration is how long the phase's workload runs: an eighth of the
// run's fault time, between 3 and 20 seconds.
func cdcDuration(d time.Duration) time.Duration {
	return min(max(d/8, 3*time.Second), 20*time.Second)
}

// cdcPhaseRun runs, after the main run, the CDC phase on a private
// PostgreSQL with wal_level=logical from PATH and checks its history.
func (rn *run) cdcPhaseRun(ctx context.Context) cdcPhase {
	fr := &run{cfg: rn.cfg, clk: rn.clk, env: rn.env}
	rng := rand.New(rand.NewPCG(rn.cfg.Seed, 0xcdc))
	ph := cdcPhase{strategy: listStrategies[rng.IntN(len(listStrategies))]}
	srv, err := testcontainers.StartLogicalPostgres()
	if err != nil {
		ph.err = fmt.Errorf("chaos: the CDC phase's PostgreSQL: %w", err)
		return ph
	}
	defer srv.Close()
	w := &cdcWork{run: fr, keys: map[int64]*cdcKey{}, db: srv.DB.DB}
	procs, err := fr.cdcSetup(ctx, w, srv.DB.DSN, ph.strategy)
	defer func() {
		for _, p := range procs {
			p.close()
		}
	}()
	if err != nil {
		ph.err = err
		return ph
	}
	w.procs = procs
	w.run.logf("cdc phase: %d processes, %s, %v of plain-SQL, write-through and paired writes", len(procs), ph.strategy, cdcDuration(rn.cfg.Duration))
	if err := w.play(ctx, rng.Uint64(), cdcDuration(rn.cfg.Duration)); err != nil {
		ph.err = err
		return ph
	}
	for _, p := range procs {
		p.stop()
		addCDCStats(&ph.stats, p.inv.Stats())
	}
	ph.pairs = int(w.pairs.Load())
	ph.ops = fr.hist.all()
	fr.logf("cdc phase: %d operations, %d pairs, %d changes applied", len(ph.ops), ph.pairs, ph.stats.Changes)
	ph.reads, ph.readVs, ph.lists, ph.listVs, ph.errs = checkCDC(ph.ops, ph.stats)
	return ph
}

// cdcSetup creates the table (REPLICA IDENTITY FULL: the log carries the
// old row, so that a change bumps exactly the lists it leaves and joins),
// seeds it, and opens the processes: the first one's Invalidator takes
// the slot before the others start theirs and stand by, and the last
// one's cache link is slowed by cdcSlow (the pairs' repository writes go
// through it). It returns once every process's cache is past its recovery
// gate.
func (fr *run) cdcSetup(ctx context.Context, w *cdcWork, dsn string, s cacheaside.Strategy) ([]*cdcProc, error) {
	db := w.db.WithContext(ctx)
	if err := db.AutoMigrate(&CDCItem{}); err != nil {
		return nil, err
	}
	if err := db.Exec("ALTER TABLE chaos_cdc_items REPLICA IDENTITY FULL").Error; err != nil {
		return nil, err
	}
	if err := w.seed(ctx); err != nil {
		return nil, err
	}
	n := max(fr.cfg.Procs, 2)
	var procs []*cdcProc
	for i := range n {
		p, err := newCDCProc(i, fr.env, dsn, s)
		if p != nil {
			procs = append(procs, p)
		}
		if err != nil {
			return procs, err
		}
		if i == 0 {
			if err := waitActive(ctx, p.inv); err != nil {
				return procs, err
			}
		}
	}
	procs[n-1].link.Slow(cdcSlow)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, p := range procs {
		if err := p.cache.WaitRecovered(ctx); err != nil {
			return procs, fmt.Errorf("chaos: cdc: process %d's recovery gate: %w (%+v)", p.id, err, p.inv.Stats())
		}
	}
	return procs, nil
}

// waitActive waits until inv holds the slot.
func waitActive(ctx context.Context, inv *cdc.Invalidator) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for !inv.Stats().Active {
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: cdc: the first Invalidator never took the slot: %w (%+v)", ctx.Err(), inv.Stats())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// newCDCProc opens process id of the phase on the database at dsn and
// starts its Invalidator.
func newCDCProc(id int, e *env, dsn string, s cacheaside.Strategy) (p *cdcProc, err error) {
	p = &cdcProc{id: id, stop: func() {}}
	if p.link, err = faultproxy.New(e.cacheRedis.Addr); err != nil {
		return nil, err
	}
	if p.db, err = openDB(dsn, 6); err != nil {
		return p, err
	}
	p.rdb = redisClient(p.link.Addr())
	if p.cache, err = cacheaside.New(p.rdb, &cacheaside.Options{Namespace: e.ns}); err != nil {
		return p, err
	}
	if p.items, err = repo.New[CDCItem, int64](p.db, p.cache, &repo.Options{Name: "cdc_items", Policy: policy(s),
		WriteThrough: true, AfterCommitErrors: true}); err != nil {
		return p, err
	}
	if p.byTime, err = repo.NewQuery(p.items, repo.QueryOf{Name: "by_grp_touched", Where: []string{"grp"}, Order: "touched DESC", Policy: policy(s)}); err != nil {
		return p, err
	}
	if p.byRank, err = repo.NewQuery(p.items, repo.QueryOf{Name: "by_grp_rank", Where: []string{"grp"}, Order: "rank", Policy: policy(s)}); err != nil {
		return p, err
	}
	if p.inv, err = cdc.New(dsn, &cdc.Options{Slot: cdcSlot, StandbyRetry: 200 * time.Millisecond}); err != nil {
		return p, err
	}
	if err = p.inv.Register(p.items); err != nil {
		return p, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.inv.Run(ctx) }()
	var once sync.Once
	p.stop = func() { once.Do(func() { cancel(); <-done }) }
	return p, nil
}

// close stops the Invalidator and tears the process down; errors are
// dropped, as process.close's.
func (p *cdcProc) close() {
	p.stop()
	if p.items != nil {
		_ = p.items.Close()
	}
	if p.cache != nil {
		_ = p.cache.Close()
	}
	if p.rdb != nil {
		_ = p.rdb.Close()
	}
	if p.db != nil {
		if sqlDB, err := p.db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
	if p.link != nil {
		_ = p.link.Close()
	}
}

// addCDCStats adds the counters of s to sum.
func addCDCStats(sum *cdc.Stats, s cdc.Stats) {
	sum.Transactions += s.Transactions
	sum.Changes += s.Changes
	sum.Skipped += s.Skipped
	sum.Undecoded += s.Undecoded
	sum.Errors += s.Errors
	sum.SlotsRecreated += s.SlotsRecreated
	if s.LastError != nil && !errors.Is(s.LastError, context.Canceled) {
		sum.LastError = s.LastError
	}
}

// addCDC adds the CDC phase's two rows, violations and note.
func (r *Report) addCDC(ph cdcPhase) {
	listErrs, readErrs := counts{}, counts{}
	for _, op := range ph.ops {
		if op.ErrKind == "" {
			continue
		}
		if op.Kind == OpList {
			listErrs[op.ErrKind]++
		} else {
			readErrs[op.ErrKind]++
		}
	}
	r.Rows = append(r.Rows,
		Row{Check: "lists × CDC (time, int order, soft delete)", Operations: ph.lists, Violations: len(ph.listVs),
			Errors: listErrs, Divergent: "-", Recovery: "-"},
		Row{Check: "write-through × CDC", Operations: ph.reads, Violations: len(ph.readVs),
			Errors: readErrs, Divergent: "-", Recovery: "-"})
	r.Violations = append(r.Violations, ph.listVs...)
	r.Violations = append(r.Violations, ph.readVs...)
	last := "none"
	if ph.stats.LastError != nil {
		last = ph.stats.LastError.Error()
	}
	r.Notes = append(r.Notes, fmt.Sprintf("cdc: %s; %d pairs of a write-through Update and a plain-SQL UPDATE of one row at once; Invalidators applied %d transactions, %d changes; %d skipped, %d undecoded, %d errors retried (last: %s)",
		ph.strategy, ph.pairs, ph.stats.Transactions, ph.stats.Changes, ph.stats.Skipped, ph.stats.Undecoded, ph.stats.Errors, last))
	if vs := append(append([]Violation(nil), ph.listVs...), ph.readVs...); len(vs) > 0 && len(r.Violations) == len(vs) {
		r.Notes = append(r.Notes, "first violation: "+vs[0].Msg)
	}
}
