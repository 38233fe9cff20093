package cacheaside

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkGetMany_sharedMiss: 4 processes × 4 goroutines GetMany the same
// 16 ids, just invalidated, under Mutex: one caller loads them (a 1 ms
// load), the others wait for its announcements. One iteration is the
// invalidation and the 16 GetManys; it reports the Redis round trips of a
// GetMany, averaged over all 16.
func BenchmarkGetMany_sharedMiss(b *testing.B) {
	const procs, readers, n = 4, 4, 16
	r := testcontainers.Redis(b)
	var rt roundTrips
	p := Policy{Strategy: Mutex, TTL: time.Hour, LockTTL: 5 * time.Second, WaitTimeout: 10 * time.Second, MaxConcurrentLoads: -1}
	ents := make([]*Entity[user], procs)
	for i := range ents {
		client := r.NewClient(b)
		client.AddHook(&rt)
		ents[i] = newEntity[user](b, newCache(b, client, r.Namespace, nil), "many", p)
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	load := func(_ context.Context, ids []string) (map[string]user, error) {
		time.Sleep(time.Millisecond)
		out := make(map[string]user, len(ids))
		for _, id := range ids {
			out[id] = user{ID: id}
		}
		return out, nil
	}
	ctx := context.Background()
	var trips int64
	for b.Loop() {
		if err := ents[0].Invalidate(ctx, ids...); err != nil {
			b.Fatal(err)
		}
		rt.n.Store(0)
		var wg sync.WaitGroup
		for _, e := range ents {
			for range readers {
				wg.Go(func() {
					if got, err := e.GetMany(ctx, ids, load); err != nil || len(got) != n {
						b.Errorf("GetMany: %d values, %v", len(got), err)
					}
				})
			}
		}
		wg.Wait()
		trips += rt.n.Load()
	}
	b.ReportMetric(float64(trips)/float64(b.N*procs*readers), "round-trips/GetMany")
}

// BenchmarkEntity_Get_miss: one Get of an id just invalidated, for each
// strategy's rebuild: the invalidation, the GET, the version read (None)
// or the lease (Mutex), an instant load and the store.
func BenchmarkEntity_Get_miss(b *testing.B) {
	for _, s := range []Strategy{None, Mutex} {
		b.Run(s.String(), func(b *testing.B) {
			r := testcontainers.Redis(b)
			e := newEntity[benchValue](b, newCache(b, r.Client, r.Namespace, nil), "bench", Policy{TTL: time.Hour, Strategy: s})
			ctx := context.Background()
			load := func(context.Context, string) (benchValue, error) { return benchRow, nil }
			b.ReportAllocs()
			for b.Loop() {
				if err := e.Invalidate(ctx, "42"); err != nil {
					b.Fatal(err)
				}
				if v, err := e.Get(ctx, "42", load); err != nil || v.ID != 42 {
					b.Fatal(v, err)
				}
			}
		})
	}
}
