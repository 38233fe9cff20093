package benchmarks

import (
	"testing"
	"time"
)

// The checker excuses a stale read as the near cache's propagation delay
// only when every write it missed is another process's repository write
// that returned nil less than outageLocalWindow before the read began.
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
		{"a write older than the window", []outageWrite{{ver: 5, done: ms(51), proc: 1}}, false, 0},
		{"a recent write after an old one missed too",
			[]outageWrite{{ver: 5, done: ms(200), proc: 1}, {ver: 6, done: ms(1), proc: 1}}, false, 0},
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
