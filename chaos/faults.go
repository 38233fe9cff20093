package chaos

import (
	"context"
	"sort"
	"sync"
	"time"
)

// injector applies a schedule's faults at their times and heals them.
type injector struct {
	run *run

	mu      sync.Mutex // guards applied
	applied []Fault    // as applied: At is when it began, Dur how long it lasted
}

type faultEvent struct {
	at    time.Duration
	heal  bool
	fault Fault
}

// play applies sched until it ends or stop closes.
func (in *injector) play(sched []Fault, stop <-chan struct{}) {
	var evs []faultEvent
	for _, f := range sched {
		evs = append(evs, faultEvent{at: f.At, fault: f})
		if f.Dur > 0 {
			evs = append(evs, faultEvent{at: f.At + f.Dur, heal: true, fault: f})
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	for _, ev := range evs {
		t := time.NewTimer(time.Until(in.run.clk.at(ev.at)))
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C:
		}
		in.do(ev)
	}
}

func (in *injector) do(ev faultEvent) {
	f, rn := ev.fault, in.run
	var p *process
	if f.Proc >= 0 {
		p = rn.procs[f.Proc]
	}
	switch {
	case ev.heal && f.Kind == FaultRestart:
		if err := rn.env.cacheRedis.restart(context.Background()); err != nil {
			rn.logf("chaos: restarting the cache Redis: %v", err)
		}
	case ev.heal && f.Kind == FaultIsolate:
		p.cacheLink.Heal()
		p.pg.Heal()
	case ev.heal:
		p.link(f.Link).Heal()
	default:
		in.apply(f, p)
	}
}

func (in *injector) apply(f Fault, p *process) {
	f.At = in.run.clk.now()
	switch f.Kind {
	case FaultCut:
		p.link(f.Link).Cut()
	case FaultStall:
		p.link(f.Link).Stall()
	case FaultSlow:
		p.link(f.Link).Slow(f.Delay)
	case FaultDrop:
		p.link(f.Link).DropCommitReplies()
	case FaultIsolate:
		p.cacheLink.Cut()
		p.pg.Slow(f.Delay)
	case FaultRestart:
		in.run.env.cacheRedis.kill()
	case FaultKill:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := in.run.env.terminate(ctx); err != nil {
			in.run.logf("chaos: pg_terminate_backend: %v", err)
		}
		cancel()
	}
	in.record(f)
}

// record adds f to the faults applied.
func (in *injector) record(f Fault) {
	in.mu.Lock()
	in.applied = append(in.applied, f)
	in.mu.Unlock()
}

// healAll ends every fault: links healed, the cache Redis running.
func (in *injector) healAll(ctx context.Context) error {
	for _, p := range in.run.procs {
		p.heal()
	}
	return in.run.env.cacheRedis.restart(ctx)
}

func (in *injector) faults() []Fault {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Fault(nil), in.applied...)
}
