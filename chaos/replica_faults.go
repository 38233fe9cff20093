package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// The replica phase's faults.
const (
	FaultApplyDelay  FaultKind = "apply_delay"  // the replica's recovery_min_apply_delay set to Delay
	FaultPauseReplay FaultKind = "replay_pause" // the replica's replay paused (pg_wal_replay_pause), then resumed
	FaultReplicaCut  FaultKind = "replica_cut"  // one process's link to the replica cut: its loads go to the primary
)

// replicaDelays are the apply delays FaultApplyDelay sets.
var replicaDelays = []time.Duration{0, 300 * time.Millisecond, time.Second}

// replicaKinds are the replica phase's fault kinds, each drawn at least
// once by every seed (replicaSchedule): the combinations with the cache
// Redis (replica_combo.go) included.
var replicaKinds = []FaultKind{FaultApplyDelay, FaultPauseReplay, FaultReplicaCut, FaultPauseCacheCut, FaultPauseRestart}

// replicaSchedule draws the replica phase's faults from seed: one per
// slot of replicaRun, one after the other, every kind of replicaKinds
// once (whatever the seed: not left to the draw) and two more drawn, At
// counted from the phase's start. A combination fault lasts half to three
// quarters of its slot; a cut of the cache Redis links hits every process
// or, one time in three, one of them; a killed cache Redis stays down a
// fifth to a third of the fault.
func replicaSchedule(seed uint64, procs int) []Fault {
	r := rand.New(rand.NewPCG(seed, 0x4e92))
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo)+1)) }
	all := replicaKinds
	kinds := append([]FaultKind{}, all...)
	for range 2 {
		kinds = append(kinds, all[r.IntN(len(all))])
	}
	r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	slot := replicaRun / time.Duration(len(kinds))
	var out []Fault
	for i, k := range kinds {
		f := Fault{At: time.Duration(i)*slot + between(0, slot/4), Kind: k, Proc: -1}
		switch k {
		case FaultApplyDelay:
			f.Delay = replicaDelays[r.IntN(len(replicaDelays))]
		case FaultPauseReplay:
			f.Dur = between(slot/4, slot/2)
		case FaultReplicaCut:
			f.Proc, f.Dur = r.IntN(procs), between(slot/4, slot/2)
		case FaultPauseCacheCut:
			f.Dur = between(slot/2, 3*slot/4)
			if r.IntN(3) == 0 {
				f.Proc = r.IntN(procs)
			}
		case FaultPauseRestart:
			f.Dur = between(slot/2, 3*slot/4)
			f.Delay = between(f.Dur/5, f.Dur/3)
		}
		out = append(out, f)
	}
	return out
}

// playReplica applies sched to sr and procs, each fault at its time from
// now and healed after its Dur (an apply delay stays until the next one),
// and returns once replicaRun has passed. A paused replay is resumed
// however the phase ends. It returns the faults as applied, on the run's
// clock.
func (fr *run) playReplica(ctx context.Context, sr *testcontainers.StreamingReplica, procs []*replicaProc, sched []Fault) ([]Fault, error) {
	t0 := fr.clk.now()
	var done []Fault
	for _, f := range sched {
		if err := waitUntil(ctx, fr.clk.at(t0+f.At)); err != nil {
			return done, err
		}
		at := fr.clk.now()
		var err error
		switch f.Kind {
		case FaultApplyDelay:
			err = sr.SetApplyDelay(ctx, f.Delay)
		case FaultPauseReplay:
			if err = sr.PauseReplay(ctx); err == nil {
				fr.replicaSweep(procs)
				err = waitUntil(ctx, fr.clk.at(at+f.Dur))
				if rerr := sr.ResumeReplay(context.WithoutCancel(ctx)); err == nil {
					err = rerr
				}
			}
		case FaultPauseCacheCut, FaultPauseRestart:
			if err = sr.PauseReplay(ctx); err == nil {
				err = fr.playCombo(ctx, procs, f, at)
				if rerr := sr.ResumeReplay(context.WithoutCancel(ctx)); err == nil {
					err = rerr
				}
			}
		case FaultReplicaCut:
			link := procs[f.Proc].link
			link.Cut()
			err = waitUntil(ctx, fr.clk.at(at+f.Dur))
			link.Heal()
		}
		f.At = at
		if f.Dur > 0 {
			f.Dur = fr.clk.now() - at
		}
		done = append(done, f)
		if err != nil {
			return done, fmt.Errorf("chaos: replica fault %s: %w", f.Kind, err)
		}
	}
	return done, waitUntil(ctx, fr.clk.at(t0+replicaRun))
}

// waitUntil returns at t, or with ctx's error when ctx ends first.
func waitUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// describeReplicaFault names a replica fault for the report's note.
func describeReplicaFault(f Fault) string {
	at := f.At.Round(time.Millisecond)
	switch f.Kind {
	case FaultApplyDelay:
		return fmt.Sprintf("apply delay %v at %v", f.Delay, at)
	case FaultPauseReplay:
		return fmt.Sprintf("replay paused %v at %v", f.Dur.Round(time.Millisecond), at)
	case FaultReplicaCut:
		return fmt.Sprintf("proc %d's replica link cut %v at %v", f.Proc, f.Dur.Round(time.Millisecond), at)
	case FaultPauseCacheCut, FaultPauseRestart:
		return describeCombo(f)
	}
	return string(f.Kind)
}
