package chaos

import (
	"strings"
	"testing"
)

func TestCheckNotFound(t *testing.T) {
	seed := w(OpPut, 1, 1, 0, 0, Yes)
	by := func(o Op) Op { o.Kind = OpGetBy; return o }
	restart := Fault{Kind: FaultRestart, Proc: -1, At: 25 * ms, Dur: 5 * ms}
	for _, tc := range []struct {
		name         string
		ops          []Op
		byID, bySlug int
		unknown      int
		want         string // "" for no violation, else a part of its message
	}{
		{"found", h(seed, r(1, 1, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"seeded row absent", h(seed, r(1, Absent, 30*ms, 40*ms)), 1, 0, 0, "put of version 1 by proc 0 completed at 0s"},
		{"by slug too", h(seed, by(r(1, Absent, 30*ms, 40*ms))), 0, 1, 0, "getby found key 1 absent"},
		{"created row absent", h(w(OpCreate, 1, 2, 10*ms, 20*ms, Yes), r(1, Absent, 30*ms, 40*ms)), 1, 0, 0, "create of version 2"},
		{"absent while the create runs", h(w(OpCreate, 1, 2, 10*ms, 35*ms, Yes), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"a create that failed binds nothing", h(w(OpCreate, 1, 2, 10*ms, 20*ms, Maybe), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"nor one committed without its upkeep", h(w(OpCreate, 1, 2, 10*ms, 20*ms, Committed), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"an update is no create", h(w(OpCreate, 1, 2, 10*ms, 20*ms, Maybe), w(OpUpdate, 1, 3, 20*ms, 25*ms, Yes), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"a put after a create of unknown outcome", h(w(OpCreate, 1, 2, 5*ms, 10*ms, Maybe), w(OpPut, 1, 3, 20*ms, 25*ms, Yes), r(1, Absent, 30*ms, 40*ms)),
			1, 0, 1, "unknown outcome"},
		{"deleted before the read", h(seed, w(OpDelete, 1, 2, 10*ms, 20*ms, Yes), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"a delete that failed excuses too", h(seed, w(OpDelete, 1, 2, 10*ms, 20*ms, Maybe), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"whatever its outcome", h(seed, w(OpDelete, 1, 2, 10*ms, 20*ms, No), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"a delete running during the read", h(seed, w(OpDelete, 1, 2, 35*ms, 60*ms, Yes), r(1, Absent, 30*ms, 40*ms)), 0, 0, 0, ""},
		{"a delete after the read", h(seed, w(OpDelete, 1, 2, 45*ms, 60*ms, Yes), r(1, Absent, 30*ms, 40*ms)), 1, 0, 0, "absent"},
		{"recreated after a delete", h(seed, w(OpDelete, 1, 2, 5*ms, 10*ms, Yes), w(OpCreate, 1, 3, 15*ms, 20*ms, Yes), r(1, Absent, 30*ms, 40*ms)),
			1, 0, 0, "create of version 3"},
		{"GetMany, one key absent", h(seed, w(OpPut, 2, 1, 0, 0, Yes),
			Op{Kind: OpGetMany, Proc: 1, Keys: []int64{2, 1}, Versions: []int64{1, Absent}, Start: 30 * ms, End: 40 * ms}), 1, 0, 0, "key 1"},
		{"a failed read is no answer", h(seed, Op{Kind: OpGet, Proc: 1, Keys: []int64{1}, Start: 30 * ms, End: 40 * ms, Err: "timeout", ErrKind: "timeout"}), 0, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := checkNotFound(tc.ops, []Fault{restart})
			if res.byID != tc.byID || res.bySlug != tc.bySlug || res.unknown != tc.unknown {
				t.Errorf("by id %d, by slug %d, unknown %d; want %d, %d, %d", res.byID, res.bySlug, res.unknown, tc.byID, tc.bySlug, tc.unknown)
			}
			switch {
			case tc.want == "" && len(res.vs) > 0:
				t.Errorf("violation in a good history: %s", res.vs[0].Msg)
			case tc.want != "" && (len(res.vs) == 0 || !strings.Contains(res.vs[0].Msg, tc.want)):
				t.Errorf("violations %v, want one about %q", res.vs, tc.want)
			}
			if res.restarts != 1 {
				t.Errorf("%d restarts, want 1", res.restarts)
			}
		})
	}
}

// The counts of a history: reads, those after the restart, failed reads.
func TestCheckNotFound_counts(t *testing.T) {
	restart := Fault{Kind: FaultRestart, Proc: -1, At: 25 * ms, Dur: 5 * ms}
	ops := h(w(OpPut, 1, 1, 0, 0, Yes), r(1, 1, 10*ms, 20*ms), r(1, 1, 22*ms, 28*ms), r(1, 1, 30*ms, 40*ms),
		Op{Kind: OpGetBy, Proc: 1, Keys: []int64{1}, Start: 30 * ms, End: 40 * ms, Err: "timeout", ErrKind: "timeout"})
	res := checkNotFound(ops, []Fault{restart})
	if res.reads != 3 || res.afterRestart != 1 || res.errs["timeout"] != 1 || res.faults != 1 {
		t.Errorf("reads %d, after the restart %d, errors %v, faults %d; want 3, 1, timeout 1, 1", res.reads, res.afterRestart, res.errs, res.faults)
	}
}
