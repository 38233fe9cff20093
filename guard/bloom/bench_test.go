package bloom_test

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkMightContain compares one MightContain (a script: read the
// generation, then k = 7 GETBITs) with a bare GETBIT round trip on the same
// client and server, and shows the per-key cost of MightContainMany.
func BenchmarkMightContain(b *testing.B) {
	r := testcontainers.Redis(b)
	ctx := context.Background()
	f := newFilter(b, r.Client, r.Namespace, "bench", bloom.Options{Capacity: 1_000_000, FalsePositiveRate: 0.01})
	in := keyset("in", 10_000)
	fill(b, ctx, f, in)
	b.Run("MightContain", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if ok, err := f.MightContain(ctx, in[i%len(in)]); err != nil || !ok {
				b.Fatal(ok, err)
			}
			i++
		}
	})
	b.Run("bare-GETBIT", func(b *testing.B) {
		key := r.Namespace + ":bench:getbit"
		if err := r.Client.SetBit(ctx, key, 1_000_000, 1).Err(); err != nil {
			b.Fatal(err)
		}
		i := int64(0)
		for b.Loop() {
			if err := r.Client.GetBit(ctx, key, i%1_000_000).Err(); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("MightContainMany-1000", func(b *testing.B) {
		batch := in[:1000]
		for b.Loop() {
			if _, err := f.MightContainMany(ctx, batch); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/key")
	})
	b.Run("Add", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if err := f.Add(ctx, in[i%len(in)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
