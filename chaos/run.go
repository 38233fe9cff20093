package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/schema"
)

// Config sizes a run. The zero values of the sizes mean the defaults of
// `make chaos`.
type Config struct {
	// PostgresDSN names a PostgreSQL server and a database to connect to
	// (e.g. postgres://postgres@127.0.0.1:5432/test); the run creates a
	// database of its own there and drops it at the end. Required.
	PostgresDSN string
	// Seed draws the fault schedule and every worker's choices. Default 0
	// is a seed like any other; the command picks a random one.
	Seed uint64
	// Duration is how long faults are injected. Default 4 minutes.
	Duration time.Duration
	// Procs is the number of simulated processes. Default 4.
	Procs int
	// Goroutines is the number of repository workers per process. Default 8.
	Goroutines int
	// Keys is the number of rows per strategy. Default 6.
	Keys int
	// Rounds is the number of expiries per strategy in the loads check.
	// Default 5.
	Rounds int
	// NoLists leaves out the list workload: the list reads of a cached
	// query, their writes and their check (the "lists" row, then with no
	// operations). Default false: lists are read and checked.
	NoLists bool
	// noReplicaAcks runs the failover phase's caches without ReplicaAcks:
	// the rule off, for the test that shows its check fails without it.
	noReplicaAcks bool
	// mainOnly stops after the main run's checks: no Redis-restart,
	// failover, replica or CDC phase (tests of the main run's checks; each
	// phase has tests of its own).
	mainOnly bool
	// OutDir is where a failing history is written. Default ".".
	OutDir string
	// Log receives progress lines. Default: none.
	Log io.Writer
}

func (c *Config) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Procs, 4)
	def(&c.Goroutines, 8)
	def(&c.Keys, 6)
	def(&c.Rounds, 5)
	if c.Duration <= 0 {
		c.Duration = 4 * time.Minute
	}
	if c.OutDir == "" {
		c.OutDir = "."
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// run is the state of one run.
type run struct {
	cfg   Config
	clk   clock
	hist  history
	env   *env
	procs []*process
	keys  map[int64]*keyState
	inj   *injector
	lists *listWorkload
	// phaseOps are the histories of the phases after the main run, by the
	// Check of their violations (writeFailure looks their operations up
	// there).
	phaseOps map[string][]Op
}

func (rn *run) logf(format string, args ...any) {
	fmt.Fprintf(rn.cfg.Log, "%7.1fs  "+format+"\n", append([]any{rn.clk.now().Seconds()}, args...)...)
}

// Run runs the workloads under the seed's faults for cfg.Duration, heals
// the faults, waits for the cache to converge, inspects it (repo's Inspect
// on every repository of one process, whose verdict must agree with the
// converge check's), runs the loads check and checks the history. The Report holds the table; its FailureFile names
// the history written when a check failed. The error is for a run that
// could not be carried out (no server, a bad DSN), not for violations.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	if cfg.PostgresDSN == "" {
		return nil, errors.New("chaos: no PostgreSQL DSN")
	}
	rn := &run{cfg: cfg, clk: newClock(), keys: map[int64]*keyState{}}
	rn.inj = &injector{run: rn}
	var err error
	if rn.env, err = openEnv(ctx, cfg.PostgresDSN, cfg.Seed); err != nil {
		return nil, err
	}
	defer rn.env.close()
	if err := rn.seedRows(ctx); err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Procs; i++ {
		p, err := newProcess(i, rn.env)
		if err != nil {
			return nil, err
		}
		defer p.close()
		rn.procs = append(rn.procs, p)
	}
	if rn.lists, err = newListWorkload(ctx, rn); err != nil {
		return nil, err
	}
	sched := schedule(cfg.Seed, cfg.Procs, cfg.Duration)
	rn.logf("seed %d: %d processes x %d workers, %d faults over %v, database %s",
		cfg.Seed, cfg.Procs, cfg.Goroutines, len(sched), cfg.Duration, rn.env.dbName)

	stop := make(chan struct{})
	workers := rn.startWorkers(stop)
	played := make(chan struct{})
	go func() { defer close(played); rn.inj.play(sched, stop) }()
	select {
	case <-time.After(time.Until(rn.clk.at(cfg.Duration))):
	case <-ctx.Done():
	}
	close(stop)
	<-played
	workers.Wait()
	if err := rn.inj.healAll(ctx); err != nil {
		return nil, err
	}
	healed := rn.clk.now()
	rn.logf("faults healed, workers stopped; %d operations", len(rn.hist.all()))

	conv := rn.converge(ctx, healed)
	rn.logf("converged: %d divergent keys after %v", len(conv.divergent), conv.recovery)
	insp := rn.inspect(ctx)
	rn.logf("inspected: %d entries, %d violations", insp.stats.Inspected, insp.stats.Violations())
	rounds := rn.burst(ctx)
	marks, err := rn.marks(ctx)
	if err != nil {
		return nil, err
	}
	rep := rn.check(conv, insp, rounds, marks)
	if cfg.mainOnly {
		return rn.finish(rep)
	}
	rep.addNotFound(rn.notFoundCheck(ctx))
	rn.logf("failover phase: a 3-master + 3-replica Cluster from PATH")
	ph := rn.failover(ctx)
	if ph.err != nil {
		return nil, ph.err
	}
	rep.addFailover(ph)
	rn.logf("replica phase: a PostgreSQL primary + streaming replica from PATH")
	rph := rn.replica(ctx)
	if rph.err != nil {
		return nil, rph.err
	}
	rep.addReplica(rph)
	rn.logf("cdc phase: a private PostgreSQL with wal_level=logical from PATH")
	cph := rn.cdcPhaseRun(ctx)
	if cph.err != nil {
		return nil, cph.err
	}
	rep.addCDC(cph)
	rn.phaseOps = map[string][]Op{"failover": ph.ops, "replica": rph.ops, "cdc": cph.ops}
	return rn.finish(rep)
}

// finish writes the failing history when rep has violations.
func (rn *run) finish(rep *Report) (*Report, error) {
	if len(rep.Violations) > 0 {
		var err error
		if rep.FailureFile, err = rn.writeFailure(rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// seedRows inserts every row at version 1 and records it as a write.
func (rn *run) seedRows(ctx context.Context) error {
	var rows []Item
	for si := range strategies {
		for j := 0; j < rn.cfg.Keys; j++ {
			rows = append(rows, newItem(itemID(si, j), 1))
		}
		rows = append(rows, newItem(hotID(si), 1))
	}
	return rn.seedItems(ctx, rn.env.db, rows)
}

// seedItems inserts rows through db and records each as a write of its
// version by no process.
func (rn *run) seedItems(ctx context.Context, db *gorm.DB, rows []Item) error {
	start := rn.clk.now()
	if err := db.WithContext(ctx).Create(&rows).Error; err != nil {
		return err
	}
	end := rn.clk.now()
	for _, r := range rows {
		rn.keys[r.ID] = &keyState{ver: r.Version}
		rn.hist.add(Op{Proc: -1, Kind: OpPut, Keys: []int64{r.ID}, Versions: []int64{r.Version}, Start: start, End: end, Applied: Yes}, nil)
	}
	return nil
}

func (rn *run) startWorkers(stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	spawn := func(f func()) {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	for _, p := range rn.procs {
		for g := 0; g < rn.cfg.Goroutines; g++ {
			w := &repoWorker{run: rn, p: p, keys: rn.cfg.Keys,
				r: rand.New(rand.NewPCG(rn.cfg.Seed, uint64(p.id*1000+g)))}
			spawn(func() { w.loop(stop) })
		}
		if !rn.cfg.NoLists {
			for g := range 2 {
				rnd := rand.New(rand.NewPCG(rn.cfg.Seed, uint64(p.id*1000+500+g)))
				spawn(func() { rn.lists.loop(rn, p, rnd, stop) })
			}
		}
		spawn(func() { rn.lockLoop(p, stop) })
		spawn(func() { rn.serialLoop(p, stop) })
		spawn(func() { rn.allowLoop(p, stop) })
	}
	return &wg
}

// marks reads seqgen's high-water marks per day from the database.
func (rn *run) marks(ctx context.Context) (map[string]int64, error) {
	var rows []struct {
		Day       string
		HighWater int64
	}
	err := rn.env.db.WithContext(ctx).Table(schema.SeqSegment{}.TableName()).
		Select("day, high_water").Where("biz = ?", serialBiz).Scan(&rows).Error
	m := map[string]int64{}
	for _, r := range rows {
		m[r.Day] = r.HighWater
	}
	return m, err
}
