package chaos

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// The failover phase on its own, with ReplicaAcks (no violation) and
// without (the promoted replica serves entries older than writes its
// master acknowledged: the check fails without the rule).
// Both run in parallel with the other rule-on tests: the rule is the
// run's own (Config.noReplicaAcks), not a process-wide switch.
func TestFailover_phase(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	for _, off := range []bool{false, true} {
		cfg := Config{PostgresDSN: pg.DSN, Seed: 13, Procs: 2, Goroutines: 2, noReplicaAcks: off}
		cfg.defaults()
		ctx := context.Background()
		env, err := openEnv(ctx, cfg.PostgresDSN, cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		defer env.close()
		rn := &run{cfg: cfg, clk: newClock(), env: env}
		ph := rn.failover(ctx)
		if ph.err != nil {
			t.Fatal(ph.err)
		}
		rep := &Report{}
		rep.addFailover(ph)
		t.Logf("%+v; %s", rep.Rows[0], ph.note)
		if ph.reads == 0 {
			t.Errorf("ReplicaAcks %d: no read", ph.acks)
		}
		switch {
		case !off && len(ph.vs) > 0:
			for _, v := range ph.vs {
				t.Errorf("ReplicaAcks 1: %s", v.Msg)
			}
		case off && len(ph.vs) == 0:
			t.Error("ReplicaAcks 0: no stale read after the failover: the check proves nothing")
		case off:
			t.Logf("ReplicaAcks 0: %d violations, the first: %s", len(ph.vs), ph.vs[0].Msg)
		}
	}
}
