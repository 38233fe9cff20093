package chaos

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestDisagree(t *testing.T) {
	for _, c := range []struct{ divergent, reported, want []int64 }{
		{nil, nil, nil},
		{[]int64{3, 1}, []int64{1, 3}, nil},
		{[]int64{1}, nil, []int64{1}},
		{nil, []int64{9001}, []int64{9001}},
		{[]int64{1, 2}, []int64{2, 5}, []int64{1, 5}},
	} {
		if got := disagree(c.divergent, c.reported); !slices.Equal(got, c.want) {
			t.Errorf("disagree(%v, %v) = %v, want %v", c.divergent, c.reported, got, c.want)
		}
	}
}

// An entry made stale behind the library's back is the one key the
// end-of-run inspection reports, so it agrees with a converge check that
// found it divergent and disagrees with one that did not.
func TestRun_inspect_planted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := testcontainers.Postgres(t)
	rn := &run{cfg: Config{Keys: 3, Log: io.Discard}, clk: newClock(), keys: map[int64]*keyState{}}
	var err error
	if rn.env, err = openEnv(ctx, pg.DSN, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rn.env.close)
	if err := rn.seedRows(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := newProcess(0, rn.env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	rn.procs = []*process{p}
	for si := range strategies {
		for j := 0; j < rn.cfg.Keys; j++ {
			if _, err := p.items[si].Get(ctx, itemID(si, j)); err != nil {
				t.Fatal(err)
			}
		}
	}
	stale := itemID(2, 1)
	if err := rn.env.db.Exec("UPDATE chaos_items SET version = 99 WHERE id = ?", stale).Error; err != nil {
		t.Fatal(err)
	}

	in := rn.inspect(ctx)
	if in.err != nil {
		t.Fatal(in.err)
	}
	// Every cached entry is inspected, and with the filters every row of
	// the table is checked against them too.
	if want := int64(len(strategies) * rn.cfg.Keys); in.stats.Inspected < want || in.stats.Stale != 1 {
		t.Errorf("inspector: %s; want at least %d inspected, 1 stale", in.note(), want)
	}
	if !slices.Equal(in.ids, []int64{stale}) {
		t.Errorf("inspector reported %v, want [%d]", in.ids, stale)
	}
	if d := disagree([]int64{stale}, in.ids); len(d) != 0 {
		t.Errorf("disagrees with converge's [%d] on %v", stale, d)
	}
	if d := disagree(nil, in.ids); !slices.Equal(d, []int64{stale}) {
		t.Errorf("disagreement with a converge check that found nothing = %v, want [%d]", d, stale)
	}
}
