package chaos

import (
	"context"
	"fmt"
	"time"
)

// The replica phase's combination faults (DESIGN.md, "Features combine":
// replicas × Redis faults): the replica's replay paused and, meanwhile, a
// fault of the cache Redis. With the cache unreachable or emptied, a load
// cannot read the write position its ids' versions recorded: it must not
// take it for 0 and trust the lagging replica, but load from the primary.
const (
	// FaultPauseCacheCut pauses the replay, writes the combination rows
	// (nil: the cache Redis is up), then cuts the cache Redis link of
	// process Proc (-1: of every process) for the rest of Dur while every
	// process writes and reads those rows; then heals the links and
	// resumes the replay.
	FaultPauseCacheCut FaultKind = "replay_pause+cache_cut"
	// FaultPauseRestart pauses the replay, writes the combination rows,
	// then kills the cache Redis (SIGKILL, as the main run's
	// FaultRestart), restarts it empty Delay later and goes on writing and
	// reading those rows from every process until Dur has passed; then
	// resumes the replay.
	FaultPauseRestart FaultKind = "replay_pause+redis_restart"
)

// isCombo reports whether k is a combination fault.
func isCombo(k FaultKind) bool { return k == FaultPauseCacheCut || k == FaultPauseRestart }

// comboRows are the rows a combination fault writes and reads: the hot
// rows and as many others (those of replicaSweep).
func comboRows() []int64 {
	ids := make([]int64, 2*replicaHot)
	for k := range ids {
		ids[k] = replicaBase + int64(k)
	}
	return ids
}

// playCombo plays combination fault f, begun at at (the caller paused the
// replay and resumes it afterwards), until at+f.Dur. First every row is
// Put through one process while the cache Redis is up: those writes
// return nil and record their position in Redis, so every later read
// must see them. Then the Redis fault, and rounds until the window ends:
// each row is updated through one process (round by round another) and
// read at once through every process, the writer first, and one process
// reads all of them with GetMany. A cut process's reads run without the
// cache, a restarted Redis has lost every recorded position: a load that
// trusted the paused replica returns, and may cache, the row as it was
// before the pause. The links are healed and the cache Redis runs again
// however it returns.
func (fr *run) playCombo(ctx context.Context, procs []*replicaProc, f Fault, at time.Duration) error {
	rows := comboRows()
	for k, id := range rows {
		w := procs[k%len(procs)]
		_ = fr.write(w.id, w.items, OpPut, id)
	}
	var cut []*replicaProc
	killed := fr.clk.now()
	switch f.Kind {
	case FaultPauseCacheCut:
		cut = procs
		if f.Proc >= 0 {
			cut = procs[f.Proc : f.Proc+1]
		}
		for _, p := range cut {
			p.cacheLink.Cut()
		}
	case FaultPauseRestart:
		fr.env.cacheRedis.kill()
	}
	defer func() {
		for _, p := range cut {
			p.cacheLink.Heal()
		}
	}()
	restarted := f.Kind != FaultPauseRestart
	for round := 0; fr.clk.now() < at+f.Dur; round++ {
		if err := ctx.Err(); err != nil {
			_ = fr.env.cacheRedis.restart(context.WithoutCancel(ctx))
			return err
		}
		if !restarted && fr.clk.now() >= killed+f.Delay {
			if err := fr.env.cacheRedis.restart(ctx); err != nil {
				return fmt.Errorf("chaos: restarting the cache Redis: %w", err)
			}
			restarted = true
		}
		fr.comboRound(procs, rows, round)
	}
	if !restarted {
		return fr.env.cacheRedis.restart(ctx)
	}
	return nil
}

// comboRound is one round of a combination fault's workload on rows.
func (fr *run) comboRound(procs []*replicaProc, rows []int64, round int) {
	n := len(procs)
	for k, id := range rows {
		w := (k + round) % n
		_ = fr.write(procs[w].id, procs[w].items, OpUpdate, id)
		for j := range n {
			p := procs[(w+j)%n]
			fr.read(p.id, p.items, id)
		}
	}
	p := procs[round%n]
	fr.readMany(p.id, p.items, rows)
}

// comboSplit splits the replica phase's reads, violations and errors by
// whether the read (or the operation) began inside a combination fault's
// window, from its start to the replay's resume: in counts those inside,
// out the others.
func comboSplit(ph replicaPhase) (in, out comboShare) {
	inside := func(t time.Duration) bool {
		for _, f := range ph.faults {
			if isCombo(f.Kind) && t >= f.At && t <= f.At+f.Dur {
				return true
			}
		}
		return false
	}
	in.errs, out.errs = counts{}, counts{}
	for _, op := range ph.ops {
		s := &out
		if inside(op.Start) {
			s = &in
		}
		if op.ErrKind != "" {
			s.errs[op.ErrKind]++
		}
		if isRead(op.Kind) && op.Err == "" {
			s.reads++
		}
	}
	for _, v := range ph.vs {
		s := &out
		if inside(v.At) {
			s = &in
		}
		s.vs++
	}
	for _, f := range ph.faults {
		s := &out
		if isCombo(f.Kind) {
			s = &in
		}
		s.faults++
	}
	return in, out
}

// comboShare is one side of comboSplit.
type comboShare struct {
	faults, reads, vs int
	errs              counts
}

// describeCombo names a combination fault for the report's note.
func describeCombo(f Fault) string {
	at, dur := f.At.Round(time.Millisecond), f.Dur.Round(time.Millisecond)
	if f.Kind == FaultPauseRestart {
		return fmt.Sprintf("replay paused %v at %v with the cache Redis killed, restarted empty after %v", dur, at, f.Delay.Round(time.Millisecond))
	}
	who := "every process's"
	if f.Proc >= 0 {
		who = fmt.Sprintf("proc %d's", f.Proc)
	}
	return fmt.Sprintf("replay paused %v at %v with %s cache Redis link cut", dur, at, who)
}
