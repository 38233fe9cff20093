package chaos

import (
	"strings"
	"testing"
)

func TestCheckRecovery(t *testing.T) {
	cut := Fault{Kind: FaultCut, Link: LinkCache, Proc: 1, At: 5 * ms, Dur: 20 * ms} // healed at 25 ms
	own := func(kind Kind, key, ver int64, a Applied) Op {
		op := w(kind, key, ver, 10*ms, 20*ms, a)
		op.Proc = 1
		return op
	}
	other := func(o Op) Op { o.Proc = 2; return o }
	seed := w(OpPut, 1, 1, 0, 0, Yes)
	for _, tc := range []struct {
		name         string
		ops          []Op
		n, afterHeal int
		want         string // "" for no violation, else a part of its message
	}{
		{"own unconfirmed write read stale after the heal", h(seed, own(OpUpdate, 1, 2, Committed), r(1, 1, 30*ms, 40*ms)), 1, 1, "returned ErrAfterCommit at 20ms"},
		{"during the fault too", h(seed, own(OpUpdate, 1, 2, Committed), r(1, 1, 21*ms, 22*ms)), 1, 0, "ErrAfterCommit"},
		{"read fresh", h(seed, own(OpUpdate, 1, 2, Committed), r(1, 2, 30*ms, 40*ms)), 1, 1, ""},
		{"read newer", h(seed, own(OpUpdate, 1, 2, Committed), w(OpUpdate, 1, 3, 25*ms, 26*ms, Yes), r(1, 3, 30*ms, 40*ms)), 1, 1, ""},
		{"read while the write runs", h(seed, own(OpUpdate, 1, 2, Committed), r(1, 1, 15*ms, 40*ms)), 0, 0, ""},
		{"another process's unconfirmed write binds nothing", h(seed, other(own(OpUpdate, 1, 2, Committed)), r(1, 1, 30*ms, 40*ms)), 0, 0, ""},
		{"a completed write is the reads checker's", h(seed, own(OpUpdate, 1, 2, Yes), r(1, 1, 30*ms, 40*ms)), 0, 0, ""},
		{"own unconfirmed delete, row read", h(seed, own(OpDelete, 1, 2, Committed), r(1, 1, 30*ms, 40*ms)), 1, 1, "as version 1"},
		{"own unconfirmed delete, absent", h(seed, own(OpDelete, 1, 2, Committed), r(1, Absent, 30*ms, 40*ms)), 1, 1, ""},
		{"own unconfirmed update, absent", h(seed, own(OpUpdate, 1, 2, Committed), r(1, Absent, 30*ms, 40*ms)), 1, 1, "as absent"},
		{"absent after a later delete", h(seed, own(OpUpdate, 1, 2, Committed), other(w(OpDelete, 1, 3, 22*ms, 35*ms, Maybe)), r(1, Absent, 30*ms, 40*ms)), 1, 1, ""},
		{"GetMany, one key stale", h(seed, own(OpUpdate, 1, 2, Committed),
			Op{Kind: OpGetMany, Proc: 1, Keys: []int64{3, 1}, Versions: []int64{Absent, 1}, Start: 30 * ms, End: 40 * ms}), 1, 1, "key 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, afterHeal, vs := checkRecovery(tc.ops, []Fault{cut})
			if n != tc.n || afterHeal != tc.afterHeal {
				t.Errorf("n, afterHeal = %d, %d, want %d, %d", n, afterHeal, tc.n, tc.afterHeal)
			}
			switch {
			case tc.want == "" && len(vs) > 0:
				t.Errorf("violation: %s", vs[0].Msg)
			case tc.want != "" && (len(vs) == 0 || !strings.Contains(vs[0].Msg, tc.want)):
				t.Errorf("violations %v, want one with %q", vs, tc.want)
			}
		})
	}
}
