package bloom_test

import (
	"math"
	"testing"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestFilter_Stats(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	const n, p = 20_000, 0.01
	f := newFilter(t, r.Client, r.Namespace, "stats", bloom.Options{Capacity: n, FalsePositiveRate: p, Shards: 5})

	st, err := f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// m = ceil(20000·ln 100/ln²2) = 191702 → 5 shards of 38344 bits; k = 7.
	// No shard is trusted before a Rebuild.
	want := bloom.Stats{Bits: 5 * 38344, HashFunctions: 7, Shards: 5, UntrustedShards: 5}
	if st != want {
		t.Fatalf("empty filter: %+v, want %+v", st, want)
	}

	fill(t, ctx, f, nil)
	if st, err := f.Stats(ctx); err != nil || st.UntrustedShards != 0 || st.BitsSet != 0 || st.Generation != 1 {
		t.Fatalf("after an empty Rebuild: %+v, %v", st, err)
	}
	for _, added := range []int{n / 4, n} {
		if err := f.AddMany(ctx, keyset("s", added)); err != nil {
			t.Fatal(err)
		}
		st, err := f.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d added: %+v", added, st)
		if st.BitsSet <= 0 || st.BitsSet > st.Bits || st.BitsSet > int64(added*st.HashFunctions) {
			t.Errorf("BitsSet %d out of range (m=%d, n·k=%d)", st.BitsSet, st.Bits, added*st.HashFunctions)
		}
		// The count estimate is within 3% of the truth at these sizes.
		if math.Abs(st.EstimatedCount-float64(added)) > 0.03*float64(added) {
			t.Errorf("EstimatedCount %.0f, added %d", st.EstimatedCount, added)
		}
		// The estimated rate follows the fill: far below p at n/4, near p
		// at n (the optimum fill is one half, so (1/2)^k ≈ p).
		if added == n && (st.FalsePositiveRate < p/2 || st.FalsePositiveRate > 1.5*p) {
			t.Errorf("at capacity: estimated FP rate %.4f, target %.2f", st.FalsePositiveRate, p)
		}
		if added < n && st.FalsePositiveRate > p/10 {
			t.Errorf("at a quarter of capacity: estimated FP rate %.5f", st.FalsePositiveRate)
		}
	}
}
