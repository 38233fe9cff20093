package chaos

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// The main run's repository workload on two processes, whose filters are
// warmed first (as a service does before it listens); the cache Redis is
// killed and restarted empty under it. With the filters' completeness rule
// the "Redis restarted empty (Bloom)" row has no violation, and the
// filters rebuild themselves; with testswitch.FilterTrustOff the emptied
// filters answer "absent" for existing rows and the row fails.
//
// The rule-on test runs in parallel with the other rule-on tests, the
// rule-off one alone (the switch is process-wide).
func TestNotFound_redisRestartedEmpty(t *testing.T) {
	t.Parallel()
	testRestartedEmpty(t, false)
}

func TestNotFound_redisRestartedEmpty_ruleOff(t *testing.T) {
	testswitch.FilterTrustOff.Store(true)
	defer testswitch.FilterTrustOff.Store(false)
	testRestartedEmpty(t, true)
}

func testRestartedEmpty(t *testing.T, off bool) {
	pg := testcontainers.Postgres(t)
	nf := restartedEmpty(t, pg.DSN)
	rep := &Report{}
	rep.addNotFound(nf)
	t.Logf("FilterTrustOff %v: %+v; %s", off, rep.Rows[0], rep.Notes[0])
	if nf.reads == 0 || nf.afterRestart == 0 || nf.faults != 1 {
		t.Errorf("FilterTrustOff %v: %d reads, %d after the restart, %d restarts hit a read", off, nf.reads, nf.afterRestart, nf.faults)
	}
	switch {
	case !off:
		for _, v := range nf.vs {
			t.Errorf("rule on: %s", v.Msg)
		}
		if nf.blooms.autoRebuilds == 0 || nf.blooms.untrustedChecks == 0 {
			t.Errorf("rule on: %+v, want untrusted checks and automatic rebuilds", nf.blooms)
		}
	case len(nf.vs) == 0:
		t.Error("FilterTrustOff: no wrong not-found after the restart: the check proves nothing")
	default:
		t.Logf("FilterTrustOff: %d violations, the first: %s", len(nf.vs), nf.vs[0].Msg)
	}
}

// restartedEmpty runs the repository workload of a short run on two
// processes with the filters warmed, on 40 rows per strategy (so that
// most rows are read before a write puts them back in the filter), kills the cache Redis once enough
// operations were recorded, restarts it empty once more were, and
// returns the not-found check of the history once reads went through the
// restarted Redis and the workload made as many operations again.
func restartedEmpty(t *testing.T, dsn string) notFound {
	t.Helper()
	cfg := Config{PostgresDSN: dsn, Seed: 14, Procs: 2, Goroutines: 3, Keys: 40}
	cfg.defaults()
	ctx := context.Background()
	env, err := openEnv(ctx, cfg.PostgresDSN, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	rn := &run{cfg: cfg, clk: newClock(), env: env, keys: map[int64]*keyState{}}
	rn.inj = &injector{run: rn}
	if err := rn.seedRows(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Procs {
		p, err := newProcess(i, env)
		if err != nil {
			t.Fatal(err)
		}
		defer p.close()
		rn.procs = append(rn.procs, p)
	}
	// The filters are shared by name: warming one process's warms all.
	for _, r := range rn.procs[0].repos() {
		if err := r.WarmFilter(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range rn.procs {
		for g := range cfg.Goroutines {
			w := &repoWorker{run: rn, p: p, keys: cfg.Keys, r: rand.New(rand.NewPCG(cfg.Seed, uint64(p.id*1000+g)))}
			wg.Go(func() { w.loop(stop) })
		}
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
			wg.Wait()
		}
	}()
	const step = 1500 // operations between two steps
	waitOps := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for rn.hist.len() < n {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %d operations", what, rn.hist.len())
			}
			time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
		}
	}
	waitOps("operations before the restart", rn.hist.len()+step)
	// The fault lasts from the kill to the restart, so that it counts as
	// hitting a read if any read ran while the cache Redis was down.
	killedAt := rn.clk.now()
	env.cacheRedis.kill()
	waitOps("operations while the cache Redis is down", rn.hist.len()+step/5)
	// Reads go to the database until each process's breaker lets them
	// through again: wait for reads that asked the emptied Redis.
	throughRedis := func() uint64 {
		var n uint64
		for _, p := range rn.procs {
			for _, r := range p.repos() {
				st := r.Stats()
				n += st.Hits + st.Misses + st.NullHits + st.Filtered
			}
		}
		return n
	}
	if err := env.cacheRedis.restart(ctx); err != nil {
		t.Fatal(err)
	}
	rn.inj.record(Fault{Kind: FaultRestart, Proc: -1, At: killedAt, Dur: rn.clk.now() - killedAt})
	from := throughRedis()
	deadline := time.Now().Add(time.Minute)
	for throughRedis() < from+step/5 {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for reads through the restarted Redis: %d", throughRedis()-from)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	waitOps("operations after the restart", rn.hist.len()+step)
	close(stop)
	wg.Wait()
	return rn.notFoundCheck(ctx)
}
