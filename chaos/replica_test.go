package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// The replica phase on its own, with the replay-position check (no stale
// read, loads on the replica and on the primary) and without it
// (testswitch.ReplicaLSNOff: loads from the lagging replica store old
// rows, which reads return after writes that completed before them: the
// check fails without the rule).
//
// Both run alone (not in parallel with the other phases' tests): the rule
// off is a process-wide testswitch. That loads reach the replica is
// checked on an event, not on the workload's pace: once the replica has
// replayed a row each process wrote, that process's miss of it must load
// from the replica (a starved machine's workload, 1,088 operations against
// some 4,000 quiet, once showed none of its own).
func TestReplica_phase(t *testing.T) { checkReplicaPhase(t, false) }

func TestReplica_phase_ruleOff(t *testing.T) { checkReplicaPhase(t, true) }

func checkReplicaPhase(t *testing.T, off bool) {
	pg := testcontainers.Postgres(t)
	cfg := Config{PostgresDSN: pg.DSN, Seed: 17, Procs: 2, Goroutines: 2}
	cfg.defaults()
	ctx := context.Background()
	env, err := openEnv(ctx, cfg.PostgresDSN, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	if off {
		testswitch.ReplicaLSNOff.Store(true)
		defer testswitch.ReplicaLSNOff.Store(false)
	}
	rn := &run{cfg: cfg, clk: newClock(), env: env}
	ph := rn.replica(ctx)
	if ph.err != nil {
		t.Fatal(ph.err)
	}
	rep := &Report{}
	rep.addReplica(ph)
	t.Logf("%+v; %+v; %s", rep.Rows[0], rep.Rows[1], rep.Notes[0])
	if ph.reads == 0 {
		t.Error("no read")
	}
	kinds := map[FaultKind]bool{}
	for _, f := range ph.faults {
		kinds[f.Kind] = true
	}
	for _, k := range replicaKinds {
		if !kinds[k] {
			t.Errorf("faults %v: no %s", ph.faults, k)
		}
	}
	if combo := rep.Rows[1]; combo.Operations == 0 || combo.Faults < 2 {
		t.Errorf("combination row %+v: want reads under both combination faults", combo)
	}
	switch {
	case !off && len(ph.vs) > 0:
		for _, v := range ph.vs {
			t.Errorf("%s: %s", v.Check, v.Msg)
		}
	case off && len(ph.vs) == 0:
		t.Error("check off: no stale read: the phase proves nothing")
	case off:
		t.Logf("check off: %d violations, the first: %s", len(ph.vs), ph.vs[0].Msg)
	}
	for _, s := range []struct {
		path  string
		loads int64
	}{{"dbresolver", ph.resolver.ReplicaLoads}, {"ReadDB", ph.readDB.ReplicaLoads}} {
		if s.loads == 0 {
			t.Errorf("%s: no load on the replica", s.path)
		}
	}
	if len(ph.caughtUpMissed) > 0 {
		t.Errorf("processes %v: a miss of a row the process wrote, once the replica had replayed the write, did not load from the replica", ph.caughtUpMissed)
	}
	if !off && ph.resolver.RedirectedLag+ph.readDB.RedirectedLag == 0 {
		t.Error("no load redirected for lag: the faults opened no window")
	}
}

// Every seed's replica schedule has every kind of fault, the
// combinations with the cache Redis included (drawn for sure, not by
// luck), each within its slot, a restart's down time within its fault.
func TestReplicaSchedule_everyKind(t *testing.T) {
	for seed := range uint64(2000) {
		sched := replicaSchedule(seed, 3)
		kinds := map[FaultKind]int{}
		for i, f := range sched {
			kinds[f.Kind]++
			if i > 0 && f.At < sched[i-1].At+sched[i-1].Dur {
				t.Fatalf("seed %d: fault %d (%+v) begins before the one before ends (%+v)", seed, i, f, sched[i-1])
			}
			if f.Kind == FaultPauseRestart && (f.Delay <= 0 || f.Delay >= f.Dur) {
				t.Fatalf("seed %d: %+v: the cache Redis must restart within the fault", seed, f)
			}
			if isCombo(f.Kind) && f.Dur < time.Second {
				t.Fatalf("seed %d: %+v: a combination fault shorter than a second", seed, f)
			}
		}
		if last := sched[len(sched)-1]; last.At+last.Dur > replicaRun {
			t.Fatalf("seed %d: %+v ends after the phase", seed, last)
		}
		for _, k := range replicaKinds {
			if kinds[k] == 0 {
				t.Fatalf("seed %d: schedule %v has no %s", seed, sched, k)
			}
		}
	}
	if len(replicaKinds) != 5 {
		t.Errorf("replicaKinds %v: want the three replica faults and the two combinations", replicaKinds)
	}
}

// The combination row counts the reads, errors and violations that began
// inside a combination fault's window, the replica row the others.
func TestComboSplit(t *testing.T) {
	s := time.Second
	ph := replicaPhase{
		faults: []Fault{{At: 1 * s, Dur: 2 * s, Kind: FaultPauseReplay}, {At: 5 * s, Dur: 2 * s, Kind: FaultPauseCacheCut, Proc: -1},
			{At: 8 * s, Dur: s, Kind: FaultPauseRestart, Delay: s / 4}},
		ops: []Op{
			{Kind: OpGet, Start: 2 * s}, {Kind: OpGet, Start: 6 * s}, {Kind: OpGetMany, Start: 8*s + s/2},
			{Kind: OpGet, Start: 6 * s, Err: "x", ErrKind: "conn"}, {Kind: OpUpdate, Start: 6 * s, ErrKind: "after_commit"},
			{Kind: OpGet, Start: 10 * s},
		},
		vs: []Violation{{At: 2 * s}, {At: 6 * s}, {At: 8 * s}, {At: 9*s + 1}},
	}
	in, out := comboSplit(ph)
	if in.faults != 2 || in.reads != 2 || in.vs != 2 || in.errs["conn"] != 1 || in.errs["after_commit"] != 1 {
		t.Errorf("inside the combinations: %+v; want 2 faults, 2 reads, 2 violations, conn 1, after_commit 1", in)
	}
	if out.faults != 1 || out.reads != 2 || out.vs != 2 || len(out.errs) != 0 {
		t.Errorf("outside: %+v; want 1 fault, 2 reads, 2 violations, no error", out)
	}
}
