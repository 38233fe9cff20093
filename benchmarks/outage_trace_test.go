package benchmarks

import (
	"testing"
	"time"
)

// The checker lets a stale read be the near cache's propagation delay only
// when every write it missed is another process's repository write that
// returned nil; settle then counts it stale unless it is younger than the
// run's window.
func TestOutageLog_propagation(t *testing.T) {
	const begin = int64(100 * time.Second)
	ms := func(d int64) int64 { return begin - d*int64(time.Millisecond) }
	cases := []struct {
		name   string
		writes []outageWrite
		want   bool
		age    time.Duration
	}{
		{"another process's write 3 ms ago", []outageWrite{{ver: 5, done: ms(3), proc: 1}}, true, 3 * time.Millisecond},
		{"two such writes, the age from the first",
			[]outageWrite{{ver: 5, done: ms(7), proc: 1}, {ver: 6, done: ms(2), proc: 2}}, true, 7 * time.Millisecond},
		{"the reader's own write", []outageWrite{{ver: 5, done: ms(3), proc: 0}}, false, 0},
		{"an ErrAfterCommit write", []outageWrite{{ver: 5, done: ms(3), proc: 1, afterCommit: true}}, false, 0},
		{"a plain-SQL write", []outageWrite{{ver: 5, done: ms(3), proc: -1}}, false, 0},
		{"an ErrAfterCommit write missed beside a nil one",
			[]outageWrite{{ver: 5, done: ms(200), proc: 2, afterCommit: true}, {ver: 6, done: ms(1), proc: 1}}, false, 0},
		{"writes not missed: the version read, or returned after the read began",
			[]outageWrite{{ver: 4, done: ms(100), proc: 0}, {ver: 6, done: begin + 1, proc: -1}}, false, 0},
	}
	for _, c := range cases {
		var l outageLog
		for _, w := range c.writes {
			l.wrote(7, w)
		}
		ok, age := l.propagation(7, 0, begin, 4)
		if ok != c.want || age != c.age {
			t.Errorf("%s: propagation = %t, %v; want %t, %v", c.name, ok, age, c.want, c.age)
		}
	}
}

func TestOutageLog_settle(t *testing.T) {
	const restore = int64(100 * time.Second)
	window := outageLocalWindow(20 * time.Millisecond) // the floor: 50 ms
	if window != outageLocalFloor {
		t.Fatalf("window = %v, want the floor %v", window, outageLocalFloor)
	}
	if w := outageLocalWindow(300 * time.Millisecond); w != 300*time.Millisecond {
		t.Fatalf("window over a p99 of 300 ms = %v", w)
	}
	var l outageLog
	l.staleRead(outageStale{id: 1, local: true, age: 3 * time.Millisecond, after: true, end: restore + 10})
	l.staleRead(outageStale{id: 2, local: true, age: 49 * time.Millisecond})
	l.staleRead(outageStale{id: 3, local: true, age: 50 * time.Millisecond, after: true, end: restore + int64(time.Second)})
	l.staleRead(outageStale{id: 4, local: true, age: 80 * time.Millisecond})
	l.staleRead(outageStale{id: 5, after: true, end: restore + 5}) // counted already: kept, not counted again
	got := l.settle(window, restore)
	want := outageSettled{local: 2, localMax: 49 * time.Millisecond, before: 1, after: 1, lastAfter: time.Second}
	if got != want {
		t.Errorf("settle = %+v, want %+v", got, want)
	}
	var ids []int64
	for _, s := range l.stale {
		ids = append(ids, s.id)
	}
	if len(ids) != 3 || ids[0] != 3 || ids[1] != 4 || ids[2] != 5 {
		t.Errorf("stale reads described: ids %v, want [3 4 5]", ids)
	}
}
