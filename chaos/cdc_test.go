package chaos

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

// The CDC phase on its own: with every rule on, no violation, and reads
// of both kinds, pairs and applied changes; with the Invalidators' list
// bumps off (testswitch.CDCListsOff), list reads keep rows plain SQL moved
// or deleted, and miss rows it inserted or moved in: the lists row fails;
// with the write-through store compared against the version it finds just
// before it, not the one it read before its COMMIT
// (testswitch.FillCompareOff), a pair's late store puts the repository's
// row over the plain-SQL one that committed after it, which the
// Invalidator had already applied: the write-through row fails.
//
// The rule-on test runs in parallel with the other rule-on tests; the
// rule-off ones, shorter, alone (the switches are process-wide).
func TestCDC_phase(t *testing.T) {
	t.Parallel()
	testCDCPhase(t, cdcCase{"rule", nil, -1}, 24*time.Second)
}

func TestCDC_phase_ruleOff(t *testing.T) {
	for _, tc := range []cdcCase{
		{"listsOff", &testswitch.CDCListsOff, 0},
		{"fillCompareOff", &testswitch.FillCompareOff, 1},
	} {
		t.Run(tc.name, func(t *testing.T) { testCDCPhase(t, tc, 12*time.Second) })
	}
}

// cdcCase is a rule switched off (none: nil) and the report row that must
// fail then.
type cdcCase struct {
	name string
	off  *atomic.Bool
	row  int
}

func testCDCPhase(t *testing.T, tc cdcCase, dur time.Duration) {
	if tc.off != nil {
		tc.off.Store(true)
		defer tc.off.Store(false)
	}
	// With a rule off, the phase shows the violation when the history
	// happens to hold the interleaving that needs the rule; on a starved
	// machine a short phase may hold too few pairs for that, so it is
	// played again with the next seed, up to three times, until it does.
	for attempt := range 3 {
		rep := playCDCPhase(t, tc, dur, uint64(23+attempt))
		if tc.off == nil {
			return
		}
		if rep.Rows[tc.row].Violations > 0 {
			for _, v := range rep.Violations {
				t.Logf("%s off: %s", tc.name, v.Msg)
				break
			}
			return
		}
		t.Logf("%s off, attempt %d: row %q has no violation yet", tc.name, attempt+1, rep.Rows[tc.row].Check)
	}
	t.Errorf("%s off: three phases and no violation: the phase proves nothing", tc.name)
}

// playCDCPhase plays the CDC phase once with seed and checks what every
// phase must show (reads of both kinds, pairs, applied changes) and, with
// every rule on, no violation.
func playCDCPhase(t *testing.T, tc cdcCase, dur time.Duration, seed uint64) *Report {
	pg := testcontainers.Postgres(t)
	cfg := Config{PostgresDSN: pg.DSN, Seed: seed, Procs: 2, Goroutines: 4, Duration: dur}
	cfg.defaults()
	ctx := context.Background()
	env, err := openEnv(ctx, cfg.PostgresDSN, cfg.Seed)
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	rn := &run{cfg: cfg, clk: newClock(), env: env}
	ph := rn.cdcPhaseRun(ctx)
	if ph.err != nil {
		t.Fatal(ph.err)
	}
	rep := &Report{}
	rep.addCDC(ph)
	t.Logf("%+v; %+v; %s", rep.Rows[0], rep.Rows[1], rep.Notes[0])
	if ph.reads == 0 || ph.lists == 0 || ph.pairs == 0 {
		t.Errorf("%d Gets, %d list reads, %d pairs: want some of each", ph.reads, ph.lists, ph.pairs)
	}
	if ph.stats.Changes == 0 {
		t.Error("the Invalidators applied no change")
	}
	if tc.off == nil {
		for _, v := range rep.Violations {
			t.Errorf("%s: %s", v.Check, v.Msg)
		}
	}
	return rep
}

// checkCDCOrder judges the rows settled during a read, by the places the
// binding writes left them in.
func TestCheckCDCOrder(t *testing.T) {
	w := func(id, ver, grp, touched, rank int64, start, end time.Duration) Op {
		return Op{Kind: OpUpdate, Keys: []int64{id}, Versions: []int64{ver}, Value: grp, Sort: []int64{touched, rank}, Start: start, End: end, Applied: Yes}
	}
	r := func(which string, start, end time.Duration, ids ...int64) Op {
		return Op{Kind: OpList, Token: which, Value: 1, Keys: ids, Start: start, End: end}
	}
	seed := []Op{w(1, 1, 1, 300, 5, 0, 0), w(2, 1, 1, 200, 7, 0, 0), w(3, 1, 1, 100, 5, 0, 0)}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"time order", append(seed, r("time", 10*ms, 20*ms, 1, 2, 3)), 0},
		{"rank order, ties by id", append(seed, r("rank", 10*ms, 20*ms, 1, 3, 2)), 0},
		{"time out of order", append(seed, r("time", 10*ms, 20*ms, 2, 1, 3)), 1},
		{"rank tie out of id order", append(seed, r("rank", 10*ms, 20*ms, 3, 1, 2)), 1},
		{"a write that completed moves the row", append(seed, w(3, 2, 1, 400, 5, 5*ms, 8*ms), r("time", 10*ms, 20*ms, 1, 2, 3)), 1},
		{"a concurrent write unsettles it", append(seed, w(3, 2, 1, 400, 5, 5*ms, 15*ms), r("time", 10*ms, 20*ms, 1, 2, 3)), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.ops {
				tc.ops[i].ID = i
			}
			if vs := checkCDCOrder(tc.ops); len(vs) != tc.want {
				t.Errorf("%d violations %v, want %d", len(vs), vs, tc.want)
			}
		})
	}
}
