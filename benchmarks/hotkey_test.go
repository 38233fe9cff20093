package benchmarks

import (
	"testing"
	"time"
)

// TestLatHist: every duration falls in a bucket whose bounds hold it, and
// quantiles come out within a bucket's width (about 3%).
func TestLatHist(t *testing.T) {
	for _, ns := range []uint64{0, 1, 31, 32, 33, 63, 64, 100, 1000, 123456, 1 << 40, 1<<63 - 1} {
		b := latBucket(ns)
		if lo, hi := latLow(b), latLow(b+1); ns < lo || ns >= hi && hi > lo {
			t.Errorf("%d ns in bucket %d = [%d, %d)", ns, b, lo, hi)
		}
	}
	var h latHist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Microsecond, 0.99: 990 * time.Microsecond} {
		if got := h.quantile(q); got < want*96/100 || got > want*104/100 {
			t.Errorf("quantile(%v) = %v, want about %v", q, got, want)
		}
	}
}
