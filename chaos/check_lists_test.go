package chaos

import (
	"strings"
	"testing"
	"time"
)

// lw is a list write of row key leaving it in group g (0: deleted).
func lw(key, ver, g int64, start, end time.Duration, a Applied) Op {
	return Op{Kind: OpListWrite, Keys: []int64{key}, Versions: []int64{ver}, Value: g, Token: "update", Start: start, End: end, Applied: a}
}

// lr is a list read of group g that returned ids.
func lr(g int64, start, end time.Duration, ids ...int64) Op {
	return Op{Kind: OpList, Proc: 1, Value: g, Keys: ids, Start: start, End: end}
}

func TestCheckLists(t *testing.T) {
	seed1, seed2 := lw(1, 1, 7, 0, 0, Yes), lw(2, 1, 7, 0, 0, Yes)
	for _, tc := range []struct {
		name string
		ops  []Op
		want string // "" for no violation, else a part of its message
	}{
		{"fresh", h(seed1, seed2, lr(7, 10*ms, 20*ms, 1, 2)), ""},
		{"a row missing", h(seed1, seed2, lr(7, 10*ms, 20*ms, 1)), "without row 2"},
		{"out of order", h(seed1, seed2, lr(7, 10*ms, 20*ms, 2, 1)), "out of order"},
		{"listed twice", h(seed1, seed2, lr(7, 10*ms, 20*ms, 1, 1, 2)), "out of order"},
		{"moved away, still listed", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Yes), lr(7, 30*ms, 40*ms, 1, 2)), "listed row 2 in group 7"},
		{"moved away, gone", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Yes), lr(7, 30*ms, 40*ms, 1), lr(8, 30*ms, 40*ms, 2)), ""},
		{"moved in, missing", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Yes), lr(8, 30*ms, 40*ms)), "without row 2"},
		{"deleted, still listed", h(seed1, seed2, lw(1, 2, 0, 10*ms, 20*ms, Yes), lr(7, 30*ms, 40*ms, 1, 2)), "leaving it deleted"},
		{"created, missing", h(seed1, seed2, lw(3, 1, 7, 10*ms, 20*ms, Yes), lr(7, 30*ms, 40*ms, 1, 2)), "without row 3"},
		{"never there", h(seed1, seed2, lr(7, 30*ms, 40*ms, 1, 2, 3)), "did not exist"},
		{"either way while the move runs", h(seed1, seed2, lw(2, 2, 8, 10*ms, 50*ms, Yes), lr(7, 30*ms, 40*ms, 1), lr(7, 30*ms, 40*ms, 1, 2)), ""},
		{"a failed move binds no read", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Maybe), lr(7, 30*ms, 40*ms, 1, 2), lr(7, 30*ms, 40*ms, 1)), ""},
		{"a move that did not happen cannot be seen", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, No), lr(7, 30*ms, 40*ms, 1)), "without row 2"},
		{"a lost invalidation may outlive later writes", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Committed), lw(2, 3, 9, 30*ms, 40*ms, Yes),
			lr(7, 50*ms, 60*ms, 1, 2), lr(9, 50*ms, 60*ms, 2)), ""},
		{"but not a later write's own groups", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Committed), lw(2, 3, 9, 30*ms, 40*ms, Yes),
			lr(9, 50*ms, 60*ms)), "without row 2"},
		{"a lost create outlives a later write that keeps the row in its group", h(seed1, seed2, lw(3, 1, 7, 10*ms, 20*ms, Maybe), lw(3, 2, 7, 30*ms, 40*ms, Yes),
			lr(7, 50*ms, 60*ms, 1, 2), lr(7, 50*ms, 60*ms, 1, 2, 3)), ""},
		{"a lost move out outlives a later write that keeps the row out", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Committed), lw(2, 3, 8, 30*ms, 40*ms, Yes),
			lr(7, 50*ms, 60*ms, 1, 2), lr(8, 50*ms, 60*ms)), ""},
		{"another row's move heals nothing (it patches its own row)", h(seed1, seed2, lw(3, 1, 7, 10*ms, 20*ms, Maybe), lw(3, 2, 7, 30*ms, 40*ms, Yes),
			lw(1, 2, 8, 42*ms, 44*ms, Yes), lr(7, 50*ms, 60*ms, 2)), ""},
		{"until a move of the row itself settles the group", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Committed), lw(2, 3, 7, 30*ms, 40*ms, Yes),
			lw(2, 4, 9, 45*ms, 48*ms, Yes), lr(7, 50*ms, 60*ms, 1, 2)), "listed row 2 in group 7"},
		{"a move after an unknown one heals only what it surely bumped", h(seed1, seed2, lw(2, 2, 8, 10*ms, 20*ms, Maybe), lw(2, 3, 9, 30*ms, 40*ms, Yes),
			lr(7, 50*ms, 60*ms, 1, 2), lr(9, 50*ms, 60*ms)), "without row 2"},
		{"a failed read is not judged", h(seed1, seed2, Op{Kind: OpList, Value: 7, Start: 10 * ms, End: 20 * ms, Err: "timeout"}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, vs := checkLists(tc.ops)
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Fatalf("violation in a good history: %s", vs[0].Msg)
			case tc.want != "" && len(vs) == 0:
				t.Fatalf("no violation, want one about %q", tc.want)
			case tc.want != "" && !strings.Contains(vs[0].Msg, tc.want):
				t.Fatalf("violation %q, want one about %q", vs[0].Msg, tc.want)
			}
		})
	}
}
