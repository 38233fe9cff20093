package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// The failover phase's sizes: its rows (ids from failoverBase), and how
// long the workload runs before the cut, between the cut and the kill,
// and after the promotion.
const (
	failoverBase   = 50_000
	failoverRows   = 12
	failoverBefore = 500 * time.Millisecond
	failoverCut    = 500 * time.Millisecond
	failoverAfter  = 1500 * time.Millisecond
)

// failoverPhase is the outcome of the Cluster failover phase.
type failoverPhase struct {
	acks  int // the caches' ReplicaAcks
	reads int
	ops   []Op // the phase's history
	vs    []Violation
	errs  counts
	note  string
	err   error // the phase could not run
}

// failover runs, after the main run, a phase of its own on a private
// 3-master + 3-replica Redis Cluster from PATH: every process opens a
// Cache over a ClusterClient with ReplicaAcks 1 (docs/outages.md's setting) and a
// repository (Mutex) on rows of their own, and its workers read and update
// them while the first master's replica is cut off (paused, its link
// killed), the master is killed (SIGKILL) and the replica promoted
// (CLUSTER FAILOVER TAKEOVER). Its history is checked as the main run's:
// no read older than a write that returned nil before it began (checkReads;
// without ReplicaAcks the promoted replica serves entries older than the
// writes its master acknowledged), nor than the reading process's own
// ErrAfterCommit write (checkRecovery).
func (rn *run) failover(ctx context.Context) failoverPhase {
	fr := &run{cfg: rn.cfg, clk: rn.clk, env: rn.env, keys: map[int64]*keyState{}}
	ph := failoverPhase{}
	rc, err := testcontainers.StartReplicatedCluster()
	if err != nil {
		ph.err = fmt.Errorf("chaos: the failover phase's Cluster: %w", err)
		return ph
	}
	defer rc.Close()
	ph.acks = 1
	if rn.cfg.noReplicaAcks {
		ph.acks = 0
	}
	var rows []Item
	for k := 0; k < failoverRows; k++ {
		rows = append(rows, newItem(failoverBase+int64(k), 1))
	}
	if err := fr.seedItems(ctx, rn.env.db, rows); err != nil {
		ph.err = err
		return ph
	}

	db, err := openDB(rn.env.dsnVia(rn.env.pgAddr), 8)
	if err != nil {
		ph.err = err
		return ph
	}
	if sqlDB, err := db.DB(); err == nil {
		defer sqlDB.Close()
	}
	var repos []*repo.Repository[Item, int64]
	var clients []*redis.ClusterClient
	for i := 0; i < rn.cfg.Procs; i++ {
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
		defer client.Close()
		clients = append(clients, client)
		c, err := cacheaside.New(client, &cacheaside.Options{Namespace: rn.env.ns, ReplicaAcks: ph.acks, BreakerThreshold: -1})
		if err != nil {
			ph.err = err
			return ph
		}
		defer c.Close()
		r, err := repo.New[Item, int64](db, c, &repo.Options{Name: "failover", Policy: policy(cacheaside.Mutex), AfterCommitErrors: true})
		if err != nil {
			ph.err = err
			return ph
		}
		defer r.Close()
		repos = append(repos, r)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var hold sync.RWMutex // held by failOver while no write may run
	for i, r := range repos {
		for g := 0; g < rn.cfg.Goroutines; g++ {
			rng := rand.New(rand.NewPCG(rn.cfg.Seed, uint64(0xf0000+i*1000+g)))
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					id := failoverBase + rng.Int64N(failoverRows)
					if rng.IntN(5) < 3 {
						fr.read(i, r, id)
					} else {
						hold.RLock()
						_ = fr.write(i, r, OpUpdate, id)
						hold.RUnlock()
					}
				}
			})
		}
	}
	ph.note, ph.err = fr.failOver(ctx, rc, clients, repos, &hold)
	close(stop)
	wg.Wait()
	if ph.err != nil {
		return ph
	}
	ph.ops = fr.hist.all()
	ph.reads, ph.vs, ph.errs = checkPhase(ph.ops, "failover")
	return ph
}

// checkPhase checks the history of a phase after the main run as the main
// run's is checked, by checkReads and checkRecovery (no Redis fault to
// heal), and names the violations' check. It returns the reads checked,
// the violations and the operations' errors by kind.
func checkPhase(ops []Op, check string) (reads int, vs []Violation, errs counts) {
	errs = counts{}
	for _, op := range ops {
		if op.ErrKind != "" {
			errs[op.ErrKind]++
		}
	}
	reads, rvs := checkReads(ops)
	_, _, cvs := checkRecovery(ops, nil)
	for _, v := range append(rvs, cvs...) {
		v.Check = check
		vs = append(vs, v)
	}
	return reads, vs, errs
}

// failOver cuts the first master's replica off, kills the master after
// failoverCut and promotes the replica, with the workload running before
// and after; once every client routes to the promoted replica, every
// process reads every row. It returns a note on the timeline.
func (fr *run) failOver(ctx context.Context, rc *testcontainers.ReplicatedCluster, clients []*redis.ClusterClient, repos []*repo.Repository[Item, int64], hold *sync.RWMutex) (string, error) {
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	sleep(failoverBefore)
	master := rc.Nodes[0]
	replica, err := rc.ReplicaOf(ctx, master)
	if err != nil {
		return "", err
	}
	// With no write running, every row cached and the cache on the
	// replica; then the replica cut off.
	hold.Lock()
	sweep := func() {
		for i, r := range repos {
			for k := int64(0); k < failoverRows; k++ {
				fr.read(i, r, failoverBase+k)
			}
		}
	}
	sweep()
	err = rc.WaitInSync(ctx, master, replica)
	if err == nil {
		err = rc.CutReplica(ctx, master, replica)
	}
	hold.Unlock()
	if err != nil {
		return "", err
	}
	cut := fr.clk.now()
	sleep(failoverCut)
	// The master dies right after writes (none still running), which its
	// replica never got.
	hold.Lock()
	held := true
	defer func() {
		if held {
			hold.Unlock()
		}
	}()
	killed := fr.clk.now()
	master.Kill()
	if err := replica.Resume(); err != nil {
		return "", err
	}
	if err := rc.Takeover(ctx, replica); err != nil {
		return "", err
	}
	promoted := fr.clk.now()
	// Every process's client learns of it (go-redis does by itself on a
	// MOVED reply, or within its periodic reload).
	probe, err := rc.KeyOn(ctx, replica)
	if err != nil {
		return "", err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, c := range clients {
		if err := testcontainers.WaitRouted(rctx, c, probe); err != nil {
			return "", fmt.Errorf("chaos: routing after the failover: %w", err)
		}
	}
	// Every process reads every row at once, beside the workers' reads;
	// then writes go on.
	sweep()
	held = false
	hold.Unlock()
	sleep(failoverAfter)
	return fmt.Sprintf("failover: a master's replica cut off at %v, the master killed at %v, the replica promoted at %v",
		cut.Round(time.Millisecond), killed.Round(time.Millisecond), promoted.Round(time.Millisecond)), ctx.Err()
}

// addFailover adds the failover phase's row, violations and note.
func (r *Report) addFailover(ph failoverPhase) {
	r.Rows = append(r.Rows, Row{Check: fmt.Sprintf("failover (Cluster, ReplicaAcks %d)", ph.acks), Faults: 1, Operations: ph.reads,
		Violations: len(ph.vs), Errors: ph.errs, Divergent: "-", Recovery: "-"})
	r.Violations = append(r.Violations, ph.vs...)
	r.Notes = append(r.Notes, ph.note)
	if len(ph.vs) > 0 && len(r.Violations) == len(ph.vs) {
		r.Notes = append(r.Notes, "first violation: "+ph.vs[0].Msg)
	}
}
