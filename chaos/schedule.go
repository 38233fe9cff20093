package chaos

import (
	"math/rand/v2"
	"time"
)

// FaultKind names a fault.
type FaultKind string

// Faults. Link faults hit one process's proxy; the others hit a server.
const (
	FaultCut     FaultKind = "cut"           // connections closed, new ones refused
	FaultStall   FaultKind = "stall"         // traffic held until healed
	FaultSlow    FaultKind = "slow"          // every chunk delayed
	FaultDrop    FaultKind = "drop_commit"   // PostgreSQL's reply to a COMMIT lost
	FaultIsolate FaultKind = "isolate"       // cache Redis cut and PostgreSQL slow, one process
	FaultRestart FaultKind = "redis_restart" // cache Redis killed, restarted empty
	FaultKill    FaultKind = "pg_terminate"  // the run's database connections terminated
)

// Link names one of a process's proxies.
type Link string

// Links of a process.
const (
	LinkCache Link = "cache" // to the cache Redis (cacheaside, seqgen)
	LinkGuard Link = "guard" // to the guard Redis (locks, limiter)
	LinkPG    Link = "pg"    // to PostgreSQL
)

// Fault is one scheduled fault: from At for Dur.
type Fault struct {
	At    time.Duration `json:"at"`
	Dur   time.Duration `json:"dur"`
	Kind  FaultKind     `json:"kind"`
	Proc  int           `json:"proc"` // -1 for a server fault
	Link  Link          `json:"link,omitempty"`
	Delay time.Duration `json:"delay,omitempty"` // slow, isolate
}

// schedule draws the faults of a run of length d over procs processes
// from seed. Each process has a lane of its own (one fault at a time on its
// links, so that healing a link ends exactly the fault that hit it); one
// more lane restarts the cache Redis and terminates database connections.
// Every fault ends by d.
func schedule(seed uint64, procs int, d time.Duration) []Fault {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	between := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
	}
	var out []Fault
	for p := 0; p < procs; p++ {
		t := between(0, 2*time.Second)
		if p == 0 && d >= 10*time.Second { // process 0 begins with the outage lane
			var lane []Fault
			lane, t = outageLane(t)
			out = append(out, lane...)
		}
		for {
			f := linkFault(r, between)
			f.At, f.Proc = t, p
			if f.At+f.Dur > d {
				break
			}
			out = append(out, f)
			t += f.Dur + between(500*time.Millisecond, 3*time.Second)
		}
	}
	for t := between(3*time.Second, 8*time.Second); ; t += between(4*time.Second, 12*time.Second) {
		f := Fault{At: t, Kind: FaultKill, Proc: -1}
		if r.IntN(2) == 0 {
			f.Kind, f.Dur = FaultRestart, between(100*time.Millisecond, time.Second)
		}
		if f.At+f.Dur > d {
			break
		}
		out = append(out, f)
	}
	return out
}

// linkFault draws one process fault: its kind, link, length and delay.
func linkFault(r *rand.Rand, between func(lo, hi time.Duration) time.Duration) Fault {
	kinds := []struct {
		kind   FaultKind
		link   Link
		weight int
	}{
		{FaultCut, LinkCache, 14}, {FaultStall, LinkCache, 6}, {FaultSlow, LinkCache, 8},
		{FaultCut, LinkGuard, 8}, {FaultStall, LinkGuard, 5}, {FaultSlow, LinkGuard, 5},
		{FaultCut, LinkPG, 6}, {FaultStall, LinkPG, 5}, {FaultSlow, LinkPG, 8},
		{FaultDrop, LinkPG, 10}, {FaultIsolate, LinkCache, 18},
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	n := r.IntN(total)
	i := 0
	for ; n >= kinds[i].weight; i++ {
		n -= kinds[i].weight
	}
	f := Fault{Kind: kinds[i].kind, Link: kinds[i].link}
	switch f.Kind {
	case FaultCut:
		f.Dur = between(time.Second, 3*time.Second)
	case FaultStall:
		f.Dur = between(200*time.Millisecond, time.Second)
	case FaultSlow:
		f.Dur, f.Delay = between(time.Second, 3*time.Second), between(5*time.Millisecond, 30*time.Millisecond)
	case FaultDrop:
		f.Dur = between(300*time.Millisecond, time.Second)
	case FaultIsolate:
		f.Dur, f.Delay = between(2*time.Second, 4*time.Second), between(20*time.Millisecond, 60*time.Millisecond)
	}
	return f
}
