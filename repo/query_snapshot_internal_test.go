package repo

import "testing"

// A snapshot sees a transaction that ended before it: below xmin, or
// below xmax and not in progress; ids compare modulo 2³² (an xid8 is cut
// to the log's 32 bits).
func TestSnapshot_sees(t *testing.T) {
	s, ok := parseSnapshot("100:110:102,105")
	if !ok {
		t.Fatal("does not parse")
	}
	for xid, want := range map[uint32]bool{99: true, 100: true, 101: true, 102: false, 105: false, 109: true, 110: false, 200: false} {
		if got := s.sees(xid); got != want {
			t.Errorf("sees(%d) = %v, want %v", xid, got, want)
		}
	}
	// From 2³³-2 (epoch 1) to 2³³+2 (epoch 2), two in progress.
	wrap, ok := parseSnapshot("8589934590:8589934594:8589934590,8589934593")
	if !ok {
		t.Fatal("does not parse")
	}
	for xid, want := range map[uint32]bool{1<<32 - 3: true, 1<<32 - 2: false, 1<<32 - 1: true, 0: true, 1: false, 2: false} {
		if got := wrap.sees(xid); got != want {
			t.Errorf("across the wrap: sees(%d) = %v, want %v", xid, got, want)
		}
	}
	for _, bad := range []string{"", "1:2", "a:2:", "1:b:", "1:2:x", "1:2:3,"} {
		if _, ok := parseSnapshot(bad); ok {
			t.Errorf("parseSnapshot(%q) parses", bad)
		}
	}
}

// A line from the log is applied to a window only for a transaction its
// snapshot did not see; a window without a snapshot cannot take one.
func TestPatchWindow_logLines(t *testing.T) {
	w := queryEntry[int64]{IDs: []int64{1, 2}, K: []string{"10", "20"}, S: "50:60:55"}
	lines := []string{"@0000000000000001 40 +05 2", "@0000000000000002 55 +30 1"} // 40 seen, 55 in progress
	page, _, ok := patchWindow(w, "", 10, lines)
	if !ok || len(page) != 2 || page[0].id != 2 || page[1].id != 1 || page[0].key != "20" {
		t.Errorf("patched = %+v, %v; want 2 at 20 (its line seen), then 1 at 30", page, ok)
	}
	w.S = ""
	if _, _, ok := patchWindow(w, "", 10, lines); ok {
		t.Error("a window without a snapshot took a log line")
	}
	if page, _, ok := patchWindow(w, "", 10, []string{"+30 1"}); !ok || page[1].id != 1 {
		t.Errorf("a writer's line on a window without a snapshot: %+v, %v", page, ok)
	}
}
