package chaos

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// The replica phase on its own, with the replay-position check (no stale
// read, loads on the replica and on the primary) and without it
// (testswitch.ReplicaLSNOff: loads from the lagging replica store old
// rows, which reads return after writes that completed before them: the
// check fails without the rule).
func TestReplica_phase(t *testing.T) {
	pg := testcontainers.Postgres(t)
	for _, off := range []bool{false, true} {
		name := map[bool]string{false: "rule", true: "ruleOff"}[off]
		t.Run(name, func(t *testing.T) {
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
			t.Logf("%+v; %s", rep.Rows[0], rep.Notes[0])
			if ph.reads == 0 {
				t.Error("no read")
			}
			kinds := map[FaultKind]bool{}
			for _, f := range ph.faults {
				kinds[f.Kind] = true
			}
			if !kinds[FaultApplyDelay] || !kinds[FaultPauseReplay] || !kinds[FaultReplicaCut] {
				t.Errorf("faults %v: want an apply delay, a paused replay and a cut replica link", ph.faults)
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
			if !off && ph.resolver.RedirectedLag+ph.readDB.RedirectedLag == 0 {
				t.Error("no load redirected for lag: the faults opened no window")
			}
		})
	}
}
