package chaos

import (
	"strings"
	"testing"
	"time"
)

const ms = time.Millisecond

// h builds a history, numbering the operations.
func h(ops ...Op) []Op {
	for i := range ops {
		ops[i].ID = i
	}
	return ops
}

func w(kind Kind, key, ver int64, start, end time.Duration, a Applied) Op {
	return Op{Kind: kind, Keys: []int64{key}, Versions: []int64{ver}, Start: start, End: end, Applied: a}
}

func r(key, got int64, start, end time.Duration) Op {
	return Op{Kind: OpGet, Proc: 1, Keys: []int64{key}, Versions: []int64{got}, Start: start, End: end}
}

func TestCheckReads(t *testing.T) {
	seed := w(OpPut, 1, 1, 0, 0, Yes)
	for _, tc := range []struct {
		name string
		ops  []Op
		want string // "" for no violation, else a part of its message
	}{
		{"fresh", h(seed, w(OpUpdate, 1, 2, 10*ms, 20*ms, Yes), r(1, 2, 30*ms, 40*ms)), ""},
		{"stale after a completed write", h(seed, w(OpUpdate, 1, 2, 10*ms, 20*ms, Yes), r(1, 1, 30*ms, 40*ms)), "completed at 20ms"},
		{"old value while the write runs", h(seed, w(OpUpdate, 1, 2, 10*ms, 50*ms, Yes), r(1, 1, 30*ms, 40*ms)), ""},
		{"new value while the write runs", h(seed, w(OpUpdate, 1, 2, 10*ms, 50*ms, Yes), r(1, 2, 30*ms, 40*ms)), ""},
		{"a failed write binds no read", h(seed, w(OpUpdate, 1, 2, 10*ms, 20*ms, Maybe), r(1, 1, 30*ms, 40*ms)), ""},
		{"nor one committed without its invalidation", h(seed, w(OpUpdate, 1, 2, 10*ms, 20*ms, Committed), r(1, 1, 30*ms, 40*ms)), ""},
		{"but it may be seen", h(seed, w(OpUpdate, 1, 2, 10*ms, 20*ms, Maybe), r(1, 2, 30*ms, 40*ms)), ""},
		{"a write that did not happen cannot be seen", h(seed, w(OpUpdate, 1, 2, 10*ms, 20*ms, No), r(1, 2, 30*ms, 40*ms)), "no write could have produced"},
		{"nor a write from the future", h(seed, w(OpUpdate, 1, 2, 50*ms, 60*ms, Yes), r(1, 2, 30*ms, 40*ms)), "no write could have produced"},
		{"absent after a delete", h(seed, w(OpDelete, 1, 2, 10*ms, 20*ms, Yes), r(1, Absent, 30*ms, 40*ms)), ""},
		{"absent after a create", h(seed, w(OpDelete, 1, 2, 10*ms, 20*ms, Yes), w(OpCreate, 1, 3, 20*ms, 25*ms, Yes), r(1, Absent, 30*ms, 40*ms)), "absent"},
		{"absent while a delete runs", h(seed, w(OpDelete, 1, 2, 35*ms, 60*ms, Maybe), r(1, Absent, 30*ms, 40*ms)), ""},
		{"a deleted version is not a value", h(seed, w(OpDelete, 1, 2, 10*ms, 20*ms, Yes), r(1, 2, 30*ms, 40*ms)), "no write could have produced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, vs := checkReads(tc.ops)
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

func TestCheckReads_getMany(t *testing.T) {
	ops := h(w(OpPut, 1, 1, 0, 0, Yes), w(OpPut, 2, 1, 0, 0, Yes), w(OpUpdate, 2, 2, 10*ms, 20*ms, Yes),
		Op{Kind: OpGetMany, Keys: []int64{1, 2}, Versions: []int64{1, 1}, Start: 30 * ms, End: 40 * ms})
	if _, vs := checkReads(ops); len(vs) != 1 || vs[0].Key != 2 {
		t.Fatalf("violations %+v, want one on key 2", vs)
	}
}

func hold(proc int, token string, fence int64, start, end time.Duration) Op {
	return Op{Kind: OpHold, Proc: proc, Token: token, Value: fence, Start: start, End: end}
}

func fenced(token string, fence int64, start, end time.Duration, a Applied) Op {
	return Op{Kind: OpFenced, Token: token, Value: fence, Start: start, End: end, Applied: a}
}

func TestCheckLock(t *testing.T) {
	good := h(hold(0, "a", 1, 0, 10*ms), fenced("a", 1, 1*ms, 2*ms, Yes),
		hold(1, "b", 2, 11*ms, 20*ms), fenced("b", 2, 12*ms, 13*ms, Yes))
	if _, vs := checkLock(good); len(vs) > 0 {
		t.Fatalf("violation in a good history: %s", vs[0].Msg)
	}
	overlap := h(hold(0, "a", 1, 0, 10*ms), fenced("a", 1, 1*ms, 2*ms, Yes),
		hold(1, "b", 2, 5*ms, 20*ms), fenced("b", 2, 6*ms, 7*ms, Yes))
	if _, vs := checkLock(overlap); len(vs) != 1 {
		t.Fatalf("violations %v, want one", vs)
	}
	rejected := h(hold(0, "a", 1, 0, 10*ms), fenced("a", 1, 8*ms, 9*ms, No),
		hold(1, "b", 2, 5*ms, 20*ms), fenced("b", 2, 6*ms, 7*ms, Yes))
	if _, vs := checkLock(rejected); len(vs) > 0 {
		t.Fatalf("a holder whose writes were all refused counted: %s", vs[0].Msg)
	}
}

func TestCheckFenced(t *testing.T) {
	good := h(fenced("a", 1, 0, 1*ms, Yes), fenced("a", 1, 2*ms, 3*ms, Yes), fenced("b", 2, 4*ms, 5*ms, Maybe),
		fenced("a", 1, 6*ms, 7*ms, No), fenced("c", 3, 8*ms, 9*ms, Yes))
	if _, vs, _ := checkFenced(good, time.Minute); len(vs) > 0 {
		t.Fatal("good fenced history reported not linearizable")
	}
	// A lower fence accepted after a higher one: the database broke the rule.
	bad := h(fenced("b", 2, 0, 1*ms, Yes), fenced("a", 1, 2*ms, 3*ms, Yes))
	if _, vs, _ := checkFenced(bad, time.Minute); len(vs) != 1 {
		t.Fatal("a lower fence accepted after a higher one was not found")
	}
	// A write refused although nothing could have been stored above it.
	bad = h(fenced("a", 1, 0, 1*ms, Yes), fenced("b", 2, 2*ms, 3*ms, No))
	if _, vs, _ := checkFenced(bad, time.Minute); len(vs) != 1 {
		t.Fatal("a refused higher fence was not found")
	}
}

func TestCheckSerials(t *testing.T) {
	s := func(serial string, counter int64) Op {
		return Op{Kind: OpSerial, Token: serial, Value: counter}
	}
	marks := map[string]int64{"20261130": 50}
	ok := h(s("CHS2026113000000001", 1), s("CHS2026113000000002", 2))
	if _, vs := checkSerials(ok, marks); len(vs) > 0 {
		t.Fatalf("violation in a good history: %s", vs[0].Msg)
	}
	dup := h(s("CHS2026113000000001", 1), s("CHS2026113000000001", 1))
	if _, vs := checkSerials(dup, marks); len(vs) != 1 || !strings.Contains(vs[0].Msg, "twice") {
		t.Fatalf("violations %v, want a duplicate", vs)
	}
	above := h(s("CHS2026113000000051", 51))
	if _, vs := checkSerials(above, marks); len(vs) != 1 || !strings.Contains(vs[0].Msg, "above") {
		t.Fatalf("violations %v, want one above the mark", vs)
	}
}

func TestCheckLimiter(t *testing.T) {
	allow := func(start time.Duration) Op {
		return Op{Kind: OpAllow, Value: 1, Start: start, End: start + ms}
	}
	var ok, over []Op
	for i := 0; i < limitN; i++ {
		ok = append(ok, allow(time.Duration(i)*ms))
		over = append(over, allow(time.Duration(i)*ms))
	}
	ok = append(ok, allow(limitW+5*ms))      // the next window
	over = append(over, allow(limitW-10*ms)) // one too many within the window
	if _, vs := checkLimiter(h(ok...)); len(vs) > 0 {
		t.Fatalf("violation in a good history: %s", vs[0].Msg)
	}
	if _, vs := checkLimiter(h(over...)); len(vs) != 1 {
		t.Fatalf("violations %v, want one", vs)
	}
}

func TestSchedule_reproducible(t *testing.T) {
	a, b := schedule(7, 4, time.Minute), schedule(7, 4, time.Minute)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("schedules of one seed differ in length: %d, %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("fault %d differs: %+v, %+v", i, a[i], b[i])
		}
		if a[i].At+a[i].Dur > time.Minute {
			t.Fatalf("fault %+v ends after the run", a[i])
		}
	}
	if c := schedule(8, 4, time.Minute); len(c) == len(a) && c[0] == a[0] {
		t.Fatal("another seed drew the same schedule")
	}
}

func TestTouched(t *testing.T) {
	ops := h(
		Op{Kind: OpAllow, Proc: 0, Start: 10 * ms, End: 20 * ms},
		Op{Kind: OpGet, Proc: 1, Start: 10 * ms, End: 100 * ms},
	)
	faults := []Fault{
		{Kind: FaultCut, Proc: 0, Link: LinkGuard, At: 15 * ms, Dur: ms}, // during proc 0's call
		{Kind: FaultCut, Proc: 0, Link: LinkGuard, At: 50 * ms, Dur: ms}, // after it
		{Kind: FaultCut, Proc: 1, Link: LinkGuard, At: 15 * ms, Dur: ms}, // another process's link
		{Kind: FaultKill, Proc: -1, At: 15 * ms},                         // PostgreSQL: not the limiter's
	}
	if n := touched(faults, ops, []Kind{OpAllow}, LinkGuard); n != 1 {
		t.Fatalf("limiter touched by %d faults, want 1", n)
	}
	if n := touched(faults, ops, []Kind{OpGet}, LinkCache, LinkPG); n != 1 {
		t.Fatalf("reads touched by %d faults, want 1 (the server fault)", n)
	}
}

func TestCheckLoads(t *testing.T) {
	rounds := []loadRound{
		{Entity: "hot_mutex", Loads: 1, Max: 1},
		{Entity: "hot_asyncrefresh", Loads: 2, Max: 1, Why: counts{"lease_lost": 2, "bypass": 1}.minus(counts{"bypass": 1, "lease_lost": 1})},
		// The first load failed: its holder gave the lease up, a waiter loaded.
		{Entity: "hot_earlyrefresh", Loads: 2, Max: 1, Why: counts{"load_error": 1}},
	}
	vs := checkLoads(rounds)
	if len(vs) != 1 {
		t.Fatalf("%d violations, want 1: %+v", len(vs), vs)
	}
	if want := "hot_asyncrefresh: 2 loads after one expiry, at most 1 allowed (events meanwhile: lease_lost:1)"; vs[0].Msg != want {
		t.Errorf("message %q, want %q", vs[0].Msg, want)
	}
}
