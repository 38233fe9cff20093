package cacheaside

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkReader: one reader alone, the latency a lone Get pays. hit
// reads a warm key; miss/<strategy> reads a new id each time, so that
// every Get misses, loads (an instant loader) and stores.
func BenchmarkReader(b *testing.B) {
	b.Run("hit", func(b *testing.B) {
		r := testcontainers.Redis(b)
		e := newEntity[benchValue](b, newCache(b, r.Client, r.Namespace, nil), "bench", Policy{TTL: time.Hour})
		ctx := context.Background()
		if err := e.Set(ctx, "42", benchRow); err != nil {
			b.Fatal(err)
		}
		load := func(context.Context, string) (benchValue, error) {
			b.Fatal("loader called on a hit")
			return benchValue{}, nil
		}
		for b.Loop() {
			if v, err := e.Get(ctx, "42", load); err != nil || v.ID != 42 {
				b.Fatal(v, err)
			}
		}
	})
	for _, s := range []Strategy{None, Mutex} {
		b.Run("miss/"+s.String(), func(b *testing.B) {
			r := testcontainers.Redis(b)
			e := newEntity[benchValue](b, newCache(b, r.Client, r.Namespace, nil), "bench", Policy{TTL: time.Hour, Strategy: s})
			ctx := context.Background()
			load := func(context.Context, string) (benchValue, error) { return benchRow, nil }
			i := 0
			for b.Loop() {
				i++
				if v, err := e.Get(ctx, strconv.Itoa(i), load); err != nil || v.ID != 42 {
					b.Fatal(v, err)
				}
			}
		})
	}
}
