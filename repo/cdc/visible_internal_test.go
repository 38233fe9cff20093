package cdc

import "testing"

func TestWiden(t *testing.T) {
	for _, c := range []struct {
		xid  uint32
		xmax uint64
		want uint64
	}{
		{100, 200, 100},
		{199, 200, 199},
		{250, 200, 250},                                // newer than the snapshot: not visible yet
		{0xFFFFFFF0, 1<<32 | 10, 0xFFFFFFF0},           // the previous epoch
		{5, 1<<32 | 10, 1<<32 | 5},                     // the same epoch
		{0xFFFFFFF0, 0xFFFFFFFF, 0xFFFFFFF0},           // first epoch, no wrap
		{3, 2<<32 | 0x80000010, 2<<32 | 3},             // far below, same epoch
		{0x80000020, 3<<32 | 0x10, 2<<32 | 0x80000020}, // from the epoch before
	} {
		if got := widen(c.xid, c.xmax); got != c.want {
			t.Errorf("widen(%#x, %#x) = %#x, want %#x", c.xid, c.xmax, got, c.want)
		}
	}
	v := &visibility{have: true, xmin: 100, xmax: 200, xip: []uint64{120, 150}}
	for xid, want := range map[uint32]bool{50: true, 100: true, 120: false, 130: true, 150: false, 199: true, 200: false, 300: false} {
		if got := v.visible(xid); got != want {
			t.Errorf("visible(%d) = %v, want %v", xid, got, want)
		}
	}
}
