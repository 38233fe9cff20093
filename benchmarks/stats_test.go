package benchmarks

import (
	"testing"
	"time"
)

// bursts merges overlapping load spans into windows, and during keeps the
// reads in flight during a window: those that began inside it, and those
// that began before it and ended inside or after it.
func TestBurstWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	windows := bursts([]span{{at(100), at(150)}, {at(120), at(160)}, {at(400), at(420)}})
	if len(windows) != 2 || !windows[0].start.Equal(at(100)) || !windows[0].end.Equal(at(160)) || !windows[1].start.Equal(at(400)) {
		t.Fatalf("windows = %v", windows)
	}
	l := newLatencies(1)
	for _, r := range []struct{ start, ms int }{
		{0, 1},    // a hit long before: out
		{95, 60},  // a miss that began just before the load and waited for it: in
		{130, 30}, // began during the rebuild: in
		{170, 1},  // a hit after: out
		{399, 2},  // in flight when the second burst began: in
		{500, 1},  // out
	} {
		l.addAt(0, at(r.start), time.Duration(r.ms)*time.Millisecond)
	}
	got := l.during(windows)
	want := []time.Duration{2 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond}
	if len(got) != len(want) {
		t.Fatalf("during = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("during = %v, want %v", got, want)
		}
	}
}
