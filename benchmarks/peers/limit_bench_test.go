package peers_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkRedisRate_Allow is go-redis/redis_rate v10's GCRA, for
// comparison with guard/limit's BenchmarkAllow/gcra: the same setup (a
// private redis-server, a limit never reached, one key) and the same
// srv-µs/op, the time Redis spent running the scripts, which a loaded
// client machine does not distort. It lives here, not in guard/limit, so
// that the library's go.mod does not require redis_rate.
func BenchmarkRedisRate_Allow(b *testing.B) {
	c := benchServer(b)
	lim := redis_rate.NewLimiter(c)
	limit := redis_rate.PerSecond(1_000_000)
	ctx := context.Background()
	loop(b, c, func() error {
		_, err := lim.Allow(ctx, "bench", limit)
		return err
	})
}

// The helpers below are copies of guard/limit's benchmark helpers.

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
