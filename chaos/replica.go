package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/plugin/dbresolver"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// The replica phase's sizes: its rows (ids from replicaBase; the first
// replicaHot of them take half the operations, so that they are written
// every few milliseconds, while the others are written and read often
// enough for stale fills but rarely enough for most of their loads to find
// the replica caught up), the replica's apply delay when no fault changed
// it (docs/replicas.md's example), and how long the workload runs under the phase's
// faults.
const (
	replicaBase  = 60_000
	replicaRows  = 2000
	replicaHot   = 8
	replicaDelay = 200 * time.Millisecond
	replicaRun   = 16 * time.Second
)

// replicaPhase is the outcome of the read-replica phase.
type replicaPhase struct {
	strategy cacheaside.Strategy
	reads    int
	ops      []Op // the phase's history
	vs       []Violation
	errs     counts
	faults   []Fault        // as applied, on the run's clock
	resolver repo.ReadStats // summed over the processes routed by dbresolver
	readDB   repo.ReadStats // summed over the processes with Options.ReadDB
	// caughtUpMissed lists the processes whose miss of a row they wrote,
	// once the replica had replayed the write, did not load from it.
	caughtUpMissed []int
	err            error // the phase could not run
}

// replicaProc is one process of the phase: a repository on the primary
// whose misses may load from the replica, reached through a proxy of its
// own (cut by FaultReplicaCut), with a Cache on the run's cache Redis
// through another (cut by FaultPauseCacheCut).
type replicaProc struct {
	id        int
	link      *faultproxy.Proxy      // to the replica
	cacheLink *faultproxy.Proxy      // to the cache Redis
	db        *gorm.DB               // the primary
	routing   *dbresolver.DBResolver // registered on db for even ids; else readDB
	readDB    *gorm.DB               // the replica through link: Options.ReadDB for odd ids
	rdb       *redis.Client
	cache     *cacheaside.Cache
	items     *repo.Repository[Item, int64]
}

// replica runs, after the main run, a phase of its own on a private
// PostgreSQL primary and streaming replica from PATH, replaying
// replicaDelay behind. Every process opens a repository whose misses load
// from the replica, the way docs/replicas.md tells users: the even processes
// register dbresolver on their *gorm.DB, the odd ones give the replica as
// repo.Options.ReadDB. Their workers read and write rows of their own
// while the seed's faults change the apply delay, pause the replay (and
// right then write rows through one process and read each through
// another: the window a load from the lagging replica would fill with the
// old row) and cut a process's link to the replica (its loads go to the
// primary); two more pause the replay while the cache Redis is cut off or
// killed and restarted empty (replica_combo.go), where no load can read
// the position it must see. Then each process writes a row and, once the
// replica has replayed everything, misses it (a load the replica must
// serve) and reads every row: an old row stored during the lag would
// still be served. The
// history is checked as the main run's (checkReads, checkRecovery):
// without the replay-position check (testswitch.ReplicaLSNOff) reads
// return rows older than writes that completed before them.
func (rn *run) replica(ctx context.Context) replicaPhase {
	fr := &run{cfg: rn.cfg, clk: rn.clk, env: rn.env, keys: map[int64]*keyState{}}
	rng := rand.New(rand.NewPCG(rn.cfg.Seed, 0x4e91))
	ph := replicaPhase{strategy: strategies[rng.IntN(len(strategies))]}
	sr, err := testcontainers.StartStreamingReplica(replicaDelay)
	if err != nil {
		ph.err = fmt.Errorf("chaos: the replica phase's PostgreSQL: %w", err)
		return ph
	}
	defer sr.Close()
	ph.err = fr.replicaRun(ctx, sr, &ph)
	if ph.err != nil {
		return ph
	}
	ph.ops = fr.hist.all()
	ph.reads, ph.vs, ph.errs = checkPhase(ph.ops, "replica")
	return ph
}

// replicaRun seeds the rows, runs the workload and the faults on sr and
// reads every row from every process at the end.
func (fr *run) replicaRun(ctx context.Context, sr *testcontainers.StreamingReplica, ph *replicaPhase) error {
	if err := sr.Primary.DB.WithContext(ctx).AutoMigrate(&Item{}); err != nil {
		return err
	}
	var rows []Item
	ids := make([]int64, replicaRows)
	for k := range ids {
		ids[k] = replicaBase + int64(k)
		rows = append(rows, newItem(ids[k], 1))
	}
	if err := fr.seedItems(ctx, sr.Primary.DB, rows); err != nil {
		return err
	}
	// The rows were not written through repo: no invalidation says a load
	// must see them, so the replica must have them before the first read.
	if err := waitReplayed(ctx, sr); err != nil {
		return err
	}
	replicaURL, err := url.Parse(sr.ReplicaDSN)
	if err != nil {
		return err
	}
	var procs []*replicaProc
	defer func() {
		for _, p := range procs {
			p.close()
		}
	}()
	for i := 0; i < fr.cfg.Procs; i++ {
		p, err := newReplicaProc(i, fr.env, sr.Primary.DSN, *replicaURL, ph.strategy)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range procs {
		for g := 0; g < fr.cfg.Goroutines; g++ {
			rng := rand.New(rand.NewPCG(fr.cfg.Seed, uint64(0x4e000+p.id*1000+g)))
			wg.Go(func() { fr.replicaLoop(p, rng, stop) })
		}
	}
	sched := replicaSchedule(fr.cfg.Seed, len(procs))
	ph.faults, err = fr.playReplica(ctx, sr, procs, sched)
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if err := fr.caughtUpReads(ctx, sr, procs, ids[len(ids)-len(procs):], ph); err != nil {
		return err
	}
	for _, p := range procs {
		for _, id := range ids[:replicaHot] {
			fr.read(p.id, p.items, id)
		}
		for k := 0; k < len(ids); k += 100 {
			fr.readMany(p.id, p.items, ids[k:min(k+100, len(ids))])
		}
	}
	for _, p := range procs {
		s := p.items.ReadStats()
		sum := &ph.readDB
		if p.routing != nil {
			sum = &ph.resolver
		}
		addReadStats(sum, s)
	}
	return nil
}

// caughtUpReads checks that loads reach the replica on an event rather
// than on the workload's pace (a starved machine's workload may show
// none): each process reads a row of its own (own[i]: a load records the
// position it saw in the row's version, which a version created by a miss
// lacks), writes it (Put, recording its commit's position) and, once the
// replica has replayed the writes, misses it: that load must run on the
// replica. A process whose load did not is listed in ph.caughtUpMissed. A
// process in its settle window (a cache fault near the end) loads
// uncached, from the primary, so the reads wait for the windows to end.
func (fr *run) caughtUpReads(ctx context.Context, sr *testcontainers.StreamingReplica, procs []*replicaProc, own []int64, ph *replicaPhase) error {
	var caches []*cacheaside.Cache
	for _, p := range procs {
		caches = append(caches, p.cache)
	}
	if err := waitSettled(ctx, caches); err != nil {
		return fmt.Errorf("chaos: replica phase: %w", err)
	}
	for i, p := range procs {
		fr.read(p.id, p.items, own[i])
		write := func() error { return fr.write(p.id, p.items, OpPut, own[i]) }
		if err := fr.cleanWrite(ctx, p.cache, write); err != nil {
			return fmt.Errorf("chaos: replica phase: the write before the caught-up read: %w", err)
		}
	}
	if err := waitSettled(ctx, caches); err != nil {
		return fmt.Errorf("chaos: replica phase: %w", err)
	}
	if err := waitReplayed(ctx, sr); err != nil {
		return err
	}
	for i, p := range procs {
		before := p.items.ReadStats().ReplicaLoads
		fr.read(p.id, p.items, own[i])
		if p.items.ReadStats().ReplicaLoads == before {
			ph.caughtUpMissed = append(ph.caughtUpMissed, p.id)
		}
	}
	return nil
}

// replicaLoop is one worker of the phase: Get, GetMany and writes of
// every kind on the phase's rows, until stop closes.
func (fr *run) replicaLoop(p *replicaProc, rng *rand.Rand, stop <-chan struct{}) {
	pick := func() int64 {
		if rng.IntN(2) == 0 {
			return replicaBase + rng.Int64N(replicaHot)
		}
		return replicaBase + rng.Int64N(replicaRows)
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch n := rng.IntN(100); {
		case n < 60:
			fr.read(p.id, p.items, pick())
		case n < 80:
			fr.readMany(p.id, p.items, []int64{pick(), pick(), pick()})
		case n < 91:
			_ = fr.write(p.id, p.items, OpUpdate, pick())
		case n < 95:
			_ = fr.write(p.id, p.items, OpPut, pick())
		case n < 98:
			_ = fr.write(p.id, p.items, OpCreate, pick())
		default:
			_ = fr.write(p.id, p.items, OpDelete, pick())
		}
	}
}

// replicaSweep writes the hot rows and as many others through one process
// each (Put: the row exists afterwards) and at once reads each through the
// next one. Run while the replica's replay is paused, it opens the window
// the position check closes: the read misses (the write invalidated the
// row) and must not load the old row from the replica.
func (fr *run) replicaSweep(procs []*replicaProc) {
	for k := 0; k < 2*replicaHot; k++ {
		w, r := procs[k%len(procs)], procs[(k+1)%len(procs)]
		id := replicaBase + int64(k)
		_ = fr.write(w.id, w.items, OpPut, id)
		fr.read(r.id, r.items, id)
	}
}

// newReplicaProc opens process id of the phase: a repository (entity
// "replica", strategy s) on the primary at primaryDSN whose misses load
// from the replica at replica through a proxy, by dbresolver for even ids
// and Options.ReadDB for odd ones, with a Cache of its own on the run's
// cache Redis.
func newReplicaProc(id int, e *env, primaryDSN string, replica url.URL, s cacheaside.Strategy) (p *replicaProc, err error) {
	p = &replicaProc{id: id}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.link, err = faultproxy.New(replica.Host); err != nil {
		return nil, err
	}
	replica.Host = p.link.Addr()
	replicaDSN := withApp(replica, "asidechaos")
	if p.db, err = openDB(primaryDSN, 6); err != nil {
		return nil, err
	}
	o := &repo.Options{Name: "replica", Policy: policy(s), AfterCommitErrors: true}
	if id%2 == 0 {
		p.routing = dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{postgres.Open(replicaDSN)}})
		if err = p.db.Use(p.routing.SetMaxOpenConns(6)); err != nil {
			return nil, err
		}
	} else {
		if p.readDB, err = openDB(replicaDSN, 6); err != nil {
			return nil, err
		}
		o.ReadDB = p.readDB
	}
	if p.cacheLink, err = faultproxy.New(e.cacheRedis.Addr); err != nil {
		return nil, err
	}
	p.rdb = redisClient(p.cacheLink.Addr())
	if p.cache, err = cacheaside.New(p.rdb, &cacheaside.Options{Namespace: e.ns}); err != nil {
		return nil, err
	}
	if p.items, err = repo.New[Item, int64](p.db, p.cache, o); err != nil {
		return nil, err
	}
	return p, nil
}

// close tears the process down; errors are dropped, as process.close's.
func (p *replicaProc) close() {
	if p.items != nil {
		_ = p.items.Close()
	}
	if p.cache != nil {
		_ = p.cache.Close()
	}
	if p.rdb != nil {
		_ = p.rdb.Close()
	}
	if p.routing != nil {
		// dbresolver's pools: the replica's is its own (closing the
		// *gorm.DB's below does not close it); the primary's is closed
		// twice, which is harmless.
		_ = p.routing.Call(func(pool gorm.ConnPool) error {
			if c, ok := pool.(io.Closer); ok {
				_ = c.Close()
			}
			return nil
		})
	}
	for _, db := range []*gorm.DB{p.db, p.readDB} {
		if db == nil {
			continue
		}
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
	for _, l := range []*faultproxy.Proxy{p.link, p.cacheLink} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// waitReplayed waits, at most 30 s past the longest apply delay, until
// the replica has replayed everything the primary had written.
func waitReplayed(ctx context.Context, sr *testcontainers.StreamingReplica) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second+time.Second)
	defer cancel()
	return sr.WaitReplayed(ctx)
}

// addReadStats adds s to sum.
func addReadStats(sum *repo.ReadStats, s repo.ReadStats) {
	sum.ReplicaLoads += s.ReplicaLoads
	sum.PrimaryLoads += s.PrimaryLoads
	sum.RedirectedLag += s.RedirectedLag
	sum.RedirectedUnavailable += s.RedirectedUnavailable
	sum.ReplicaErrors += s.ReplicaErrors
	sum.RedirectedUnknown += s.RedirectedUnknown
}

// addReplica adds the replica phase's rows, faults, violations and note:
// one row for the reads that began outside the combination faults'
// windows, one, "replica × cache Redis", for those inside (comboSplit).
// Every violation keeps the Check "replica".
func (r *Report) addReplica(ph replicaPhase) {
	in, out := comboSplit(ph)
	r.Rows = append(r.Rows, Row{Check: "replica (lag, paused replay)", Faults: out.faults, Operations: out.reads,
		Violations: out.vs, Errors: out.errs, Divergent: "-", Recovery: "-"},
		Row{Check: "replica × cache Redis (cut, restart)", Faults: in.faults, Operations: in.reads,
			Violations: in.vs, Errors: in.errs, Divergent: "-", Recovery: "-"})
	r.Faults = append(r.Faults, ph.faults...)
	r.Violations = append(r.Violations, ph.vs...)
	var fs []string
	for _, f := range ph.faults {
		fs = append(fs, describeReplicaFault(f))
	}
	r.Notes = append(r.Notes, fmt.Sprintf("replica: %s, apply delay %v; loads via dbresolver %s; via ReadDB %s; faults: %s",
		ph.strategy, replicaDelay, readSummary(ph.resolver), readSummary(ph.readDB), strings.Join(fs, ", ")))
	if len(ph.vs) > 0 && len(r.Violations) == len(ph.vs) {
		r.Notes = append(r.Notes, "first violation: "+ph.vs[0].Msg)
	}
}

// readSummary prints where loads went.
func readSummary(s repo.ReadStats) string {
	return fmt.Sprintf("%d on the replica, %d on the primary (%d redirected for lag, %d for a position that could not be read, %d with the replica unavailable, %d retried after a replica error)",
		s.ReplicaLoads, s.PrimaryLoads, s.RedirectedLag, s.RedirectedUnknown, s.RedirectedUnavailable, s.ReplicaErrors)
}
