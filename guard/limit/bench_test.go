package limit

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// The benchmarks allow (nearly) every call, so that each measures the
// common path: one script call that updates the state. They run on a
// private redis-server, so that its command statistics are theirs alone:
// besides the client's ns/op they report srv-µs/op, the time Redis spent
// running the scripts, which a loaded client machine does not distort.
// go-redis/redis_rate's GCRA, to compare with BenchmarkAllow/gcra, is
// BenchmarkRedisRate_Allow in the module benchmarks/peers (the library
// does not require redis_rate).

// benchServer starts a private redis-server and returns a client of it.
func benchServer(b *testing.B) *redis.Client {
	b.Helper()
	srv := testcontainers.NewRedisServer(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// scriptMicros returns the µs Redis has spent in EVAL and EVALSHA.
func scriptMicros(b *testing.B, c *redis.Client) float64 {
	b.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || name != "cmdstat_eval" && name != "cmdstat_evalsha" {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				us, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += us
			}
		}
	}
	return total
}

// loop runs op b.N times and reports the server time per op.
func loop(b *testing.B, c *redis.Client, op func() error) {
	b.Helper()
	before := scriptMicros(b, c)
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((scriptMicros(b, c)-before)/float64(b.N), "srv-µs/op")
}

func BenchmarkAllow(b *testing.B) {
	c := benchServer(b)
	ns := &Options{Namespace: "bench"}
	const many = 1_000_000 // per second: never reached
	for _, bc := range []struct {
		name  string
		build func() (Limiter, error)
	}{
		{"fixed_window", func() (Limiter, error) {
			return NewFixedWindow(c, FixedWindow{Limit: many, Window: time.Second}, ns)
		}},
		{"sliding_log", func() (Limiter, error) {
			return NewSlidingLog(c, SlidingLog{Limit: many, Window: time.Second}, ns)
		}},
		{"sliding_window", func() (Limiter, error) {
			return NewSlidingWindow(c, SlidingWindow{Limit: many, Window: time.Second}, ns)
		}},
		{"gcra", func() (Limiter, error) {
			return NewGCRA(c, GCRA{Rate: PerSecond(many)}, ns)
		}},
		{"funnel", func() (Limiter, error) {
			return NewFunnel(c, Funnel{Capacity: many, Leak: PerSecond(many)}, ns)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lim, err := bc.build()
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			loop(b, c, func() error {
				_, err := lim.Allow(ctx, "bench")
				return err
			})
		})
	}
	b.Run("concurrency", func(b *testing.B) {
		s, err := NewConcurrency(c, Concurrency{Limit: many}, ns)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		loop(b, c, func() error { // TryAcquire and Release: two round trips
			l, err := s.TryAcquire(ctx, "bench")
			if err != nil {
				return err
			}
			return l.Release(ctx)
		})
	})
}
