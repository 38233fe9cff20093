package cacheaside

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// benchValue is a typical small row.
type benchValue struct {
	ID        int64     `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

var benchRow = benchValue{ID: 42, Email: "ada@example.com", Name: "Ada Lovelace", CreatedAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}

// BenchmarkEntity_Get_hit: Get on a warm key.
func BenchmarkEntity_Get_hit(b *testing.B) {
	r := testcontainers.Redis(b)
	e := newEntity[benchValue](b, newCache(b, r.Client, r.Namespace, nil), "bench", Policy{TTL: time.Hour})
	ctx := context.Background()
	if err := e.Set(ctx, "42", benchRow); err != nil {
		b.Fatal(err)
	}
	load := func(ctx context.Context, id string) (benchValue, error) {
		b.Fatal("loader called on a hit")
		return benchValue{}, nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		v, err := e.Get(ctx, "42", load)
		if err != nil || v.ID != 42 {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkEntity_Get_localHit: Get served by the near cache (no round
// trip): the gate's cost on its own.
func BenchmarkEntity_Get_localHit(b *testing.B) {
	r := testcontainers.Redis(b)
	c := newCache(b, r.NewClient(b), r.Namespace, nil)
	e := newEntity[benchValue](b, c, "bench", Policy{TTL: time.Hour, Local: &LocalPolicy{TTL: time.Hour}})
	ctx := context.Background()
	if err := c.WaitLocal(ctx); err != nil {
		b.Fatal(err)
	}
	if err := e.Set(ctx, "42", benchRow); err != nil {
		b.Fatal(err)
	}
	load := func(ctx context.Context, id string) (benchValue, error) {
		b.Fatal("loader called on a hit")
		return benchValue{}, nil
	}
	for e.Stats().LocalHits == 0 { // the first Get fills the near cache
		if _, err := e.Get(ctx, "42", load); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		v, err := e.Get(ctx, "42", load)
		if err != nil || v.ID != 42 {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkEntity_GetMany_hit: GetMany of 10 warm keys (one MGET), with
// and without a near cache (whose hits make no round trip).
func BenchmarkEntity_GetMany_hit(b *testing.B) {
	for _, near := range []bool{false, true} {
		name := "redis"
		if near {
			name = "local"
		}
		b.Run(name, func(b *testing.B) {
			r := testcontainers.Redis(b)
			c := newCache(b, r.NewClient(b), r.Namespace, nil)
			p := Policy{TTL: time.Hour}
			if near {
				p.Local = &LocalPolicy{TTL: time.Hour}
			}
			e := newEntity[benchValue](b, c, "bench", p)
			ctx := context.Background()
			if err := c.WaitLocal(ctx); err != nil {
				b.Fatal(err)
			}
			ids := make([]string, 10)
			for i := range ids {
				ids[i] = strconv.Itoa(i + 1)
				if err := e.Set(ctx, ids[i], benchRow); err != nil {
					b.Fatal(err)
				}
			}
			load := func(ctx context.Context, ids []string) (map[string]benchValue, error) {
				b.Fatal("loader called on a hit")
				return nil, nil
			}
			for near && e.Stats().LocalHits < uint64(len(ids)) { // fill the near cache
				if _, err := e.GetMany(ctx, ids, load); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				m, err := e.GetMany(ctx, ids, load)
				if err != nil || len(m) != len(ids) {
					b.Fatal(len(m), err)
				}
			}
		})
	}
}

// BenchmarkBare_Get_decode: the same value with a bare GET and
// json.Unmarshal on the same client, the floor for the hit path.
func BenchmarkBare_Get_decode(b *testing.B) {
	r := testcontainers.Redis(b)
	ctx := context.Background()
	key := r.Namespace + ":bare:42"
	payload, _ := json.Marshal(benchRow)
	if err := r.Client.Set(ctx, key, payload, time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		data, err := r.Client.Get(ctx, key).Bytes()
		if err != nil {
			b.Fatal(err)
		}
		var v benchValue
		if err := json.Unmarshal(data, &v); err != nil || v.ID != 42 {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkHit_ratio interleaves the two paths above in one loop, so that
// load on a shared machine hits both alike, and reports each path's mean
// and their ratio (the target is ≤ 1.15).
func BenchmarkHit_ratio(b *testing.B) {
	r := testcontainers.Redis(b)
	e := newEntity[benchValue](b, newCache(b, r.Client, r.Namespace, nil), "bench", Policy{TTL: time.Hour})
	ctx := context.Background()
	if err := e.Set(ctx, "42", benchRow); err != nil {
		b.Fatal(err)
	}
	key := r.Namespace + ":bare:42"
	payload, _ := json.Marshal(benchRow)
	if err := r.Client.Set(ctx, key, payload, time.Hour).Err(); err != nil {
		b.Fatal(err)
	}
	load := func(ctx context.Context, id string) (benchValue, error) { return benchValue{}, nil }
	var ent, bare time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := e.Get(ctx, "42", load); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		data, err := r.Client.Get(ctx, key).Bytes()
		if err != nil {
			b.Fatal(err)
		}
		var v benchValue
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
		ent += t1.Sub(t0)
		bare += time.Since(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ent.Nanoseconds())/n, "entity-ns/op")
	b.ReportMetric(float64(bare.Nanoseconds())/n, "bare-ns/op")
	b.ReportMetric(float64(ent)/float64(bare), "ratio")
}

// BenchmarkCoalesceReads: 64 parallel readers of one hot key with the
// default Policy, whose Gets share GETs adaptively. ns/op is per read (b.N
// reads in all); GETs/read is the Redis GETs sent per read.
func BenchmarkCoalesceReads(b *testing.B) {
	const readers = 64
	r := testcontainers.Redis(b)
	client := r.NewClient(b)
	var h getHook
	client.AddHook(&h)
	e := newEntity[benchValue](b, newCache(b, client, r.Namespace, nil), "bench", Policy{TTL: time.Hour})
	ctx := context.Background()
	if err := e.Set(ctx, "42", benchRow); err != nil {
		b.Fatal(err)
	}
	load := func(ctx context.Context, id string) (benchValue, error) {
		return benchValue{}, errors.New("loader called on a hit")
	}
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((readers + procs - 1) / procs)
	b.ReportAllocs()
	h.gets.Store(0)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if v, err := e.Get(ctx, "42", load); err != nil || v.ID != 42 {
				b.Error(v, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(h.gets.Load())/float64(b.N), "GETs/read")
}

// BenchmarkEntity_Get_hotKeys: Get with Options.HotKeys on, for a key
// that never promotes (MinReads out of reach: the tier's miss, the ticket
// and the sampled count on top of a Redis hit) and for one that did (an
// automatic near cache hit).
func BenchmarkEntity_Get_hotKeys(b *testing.B) {
	for _, bc := range []struct {
		name     string
		minReads int
	}{{"cold", 1 << 30}, {"promoted", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			r := testcontainers.Redis(b)
			c := newCache(b, r.NewClient(b), r.Namespace, &Options{HotKeys: &HotKeyPolicy{MinReads: bc.minReads, Sample: 1, TTL: time.Hour}})
			e := newEntity[benchValue](b, c, "bench", Policy{TTL: time.Hour})
			ctx := context.Background()
			if err := c.WaitLocal(ctx); err != nil {
				b.Fatal(err)
			}
			if err := e.Set(ctx, "42", benchRow); err != nil {
				b.Fatal(err)
			}
			load := func(ctx context.Context, id string) (benchValue, error) {
				b.Fatal("loader called on a hit")
				return benchValue{}, nil
			}
			for i := 0; bc.minReads == 1 && e.Stats().LocalHits == 0; i++ { // promote it
				if _, err := e.Get(ctx, "42", load); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				v, err := e.Get(ctx, "42", load)
				if err != nil || v.ID != 42 {
					b.Fatal(v, err)
				}
			}
		})
	}
}
