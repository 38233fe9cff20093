package chaos

import (
	"strings"
	"testing"
	"time"
)

func TestCheckOutage(t *testing.T) {
	cutGuard := Fault{Kind: FaultCut, Link: LinkGuard, Proc: 0, At: 100 * ms, Dur: 500 * ms}
	stallCache := Fault{Kind: FaultStall, Link: LinkCache, Proc: 0, At: 100 * ms, Dur: 500 * ms}
	pgCut := Fault{Kind: FaultCut, Link: LinkPG, Proc: 0, At: 200 * ms, Dur: 100 * ms}
	op := func(k Kind, proc int, start time.Duration, kind, msg string) Op {
		return Op{Kind: k, Proc: proc, Start: start, End: start + 10*ms, ErrKind: kind, Err: msg}
	}
	for _, tc := range []struct {
		name   string
		faults []Fault
		ops    []Op
		n      int
		want   string // "" for no violation, else a part of its message
	}{
		{"serial issued during a stall", []Fault{stallCache}, h(op(OpSerial, 0, 150*ms, "", "")), 1, ""},
		{"serial failed during a stall", []Fault{stallCache}, h(op(OpSerial, 0, 150*ms, "timeout", "seqgen: redis: timeout")), 1, "no serial"},
		{"serial failed while PostgreSQL was cut too", []Fault{stallCache, pgCut}, h(op(OpSerial, 0, 250*ms, "conn", "pg")), 0, ""},
		{"serial of another process", []Fault{stallCache}, h(op(OpSerial, 1, 150*ms, "conn", "x")), 0, ""},
		{"serial before the fault", []Fault{stallCache}, h(op(OpSerial, 0, 50*ms, "conn", "x")), 0, ""},
		{"serial during a cut of the other Redis", []Fault{cutGuard}, h(op(OpSerial, 0, 150*ms, "conn", "x")), 0, ""},
		{"limiter fails closed on a cut", []Fault{cutGuard}, h(op(OpAllow, 0, 150*ms, "conn", "EOF"), op(OpAllow, 0, 160*ms, "breaker_open", "limit: breaker open")), 2, ""},
		{"limiter error it does not document", []Fault{cutGuard}, h(op(OpAllow, 0, 150*ms, "other", "boom")), 1, "none it documents"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, vs, _ := checkOutage(tc.ops, tc.faults)
			if n != tc.n {
				t.Errorf("n = %d, want %d", n, tc.n)
			}
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Errorf("violation: %s", vs[0].Msg)
			case tc.want != "" && (len(vs) == 0 || !strings.Contains(vs[0].Msg, tc.want)):
				t.Errorf("violations %+v, want one with %q", vs, tc.want)
			}
		})
	}
}

// Every schedule long enough begins process 0's lane with a cut and a
// stall of each Redis.
func TestSchedule_outageLane(t *testing.T) {
	for seed := range uint64(5) {
		seen := map[string]bool{}
		for _, f := range schedule(seed, 2, 20*time.Second) {
			if f.Proc == 0 && (f.Kind == FaultCut || f.Kind == FaultStall) {
				seen[string(f.Kind)+"/"+string(f.Link)] = true
			}
		}
		for _, k := range []string{"cut/guard", "stall/guard", "cut/cache", "stall/cache"} {
			if !seen[k] {
				t.Errorf("seed %d: no %s for process 0", seed, k)
			}
		}
	}
}
