package benchmarks

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/sample"
)

// The stale accounting of skew: a read is stale when a write of a newer
// version had returned before it began, aged from the first such write's
// return; after the window only when it began more than the window after
// that. Reads that answer the newest version, or began before the newer
// write returned, are not.
func TestSkewKeys_age(t *testing.T) {
	keys := newSkewKeys(2)
	write := func(k int) int64 {
		var got int64
		if err := keys.write(k, func(ver int64) error { got = ver; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := time.Now().Add(-time.Second)
	if v := write(0); v != 1 {
		t.Fatalf("first write of a key: version %d, want 1", v)
	}
	if err := keys.write(0, func(int64) error { return errors.New("refused") }); err == nil || keys.keys[0].latest.Load() != 1 {
		t.Fatalf("a failed write: %v, latest %d; want its error, latest 1", err, keys.keys[0].latest.Load())
	}
	one := keys.keys[0].done[0]
	if v := write(0); v != 2 {
		t.Fatalf("second write (after a failed one): version %d, want 2", v)
	}
	later := one.Add(time.Hour)
	for _, c := range []struct {
		k     int
		ver   int64
		begin time.Time
		want  time.Duration // -1: not stale
	}{
		{0, 2, later, -1},        // the newest version
		{0, 0, before, -1},       // began before any write returned
		{0, 0, later, time.Hour}, // version 0, an hour after version 1 returned
		{0, 1, one, -1},          // began as version 1 returned: version 2 had not
		{1, 0, later, -1},        // a key never written
		{0, 3, later, -1},        // a write in flight, committed before it returned
		{0, 0, one.Add(1), 1},    // 1ns after version 1 returned
		{0, 0, one.Add(-1), -1},  // 1ns before
	} {
		if got := keys.age(c.k, c.ver, c.begin); got != c.want {
			t.Errorf("key %d version %d begun %v after version 1: age %v, want %v", c.k, c.ver, c.begin.Sub(one), got, c.want)
		}
	}

	// skewRead counts a read that answers an old version, after the
	// window when it began later than that, and a read that fails or
	// answers no version as an error.
	answer := func(name string, err error) func(context.Context, int64) (sample.User, error) {
		return func(context.Context, int64) (sample.User, error) { return sample.User{Name: name}, err }
	}
	var c skewCounts
	skewRead(context.Background(), answer("2", nil), keys, 0, time.Millisecond, &c)
	if c.stale != 0 || c.errs != 0 || c.hist.n != 1 {
		t.Errorf("a fresh read: %d stale, %d errors, %d reads; want 0, 0, 1", c.stale, c.errs, c.hist.n)
	}
	time.Sleep(2 * time.Millisecond) // past the window after version 2
	skewRead(context.Background(), answer("0", nil), keys, 0, time.Millisecond, &c)
	skewRead(context.Background(), answer("1", nil), keys, 0, time.Hour, &c)
	if c.stale != 2 || c.after != 1 || c.maxAge < time.Millisecond {
		t.Errorf("two old versions: %d stale, %d after the window, oldest %v; want 2, 1, ≥ 1ms", c.stale, c.after, c.maxAge)
	}
	skewRead(context.Background(), answer("x", nil), keys, 0, time.Millisecond, &c)
	skewRead(context.Background(), answer("", errors.New("down")), keys, 0, time.Millisecond, &c)
	if c.errs != 2 || c.hist.n != 5 {
		t.Errorf("a bad name and a failed read: %d errors, %d reads; want 2, 5", c.errs, c.hist.n)
	}
}
