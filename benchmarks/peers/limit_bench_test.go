package peers_test

import (
	"context"
	"testing"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkGCRA compares guard/limit's GCRA with go-redis/redis_rate v10's
// in one run: each on a private redis-server, with a limit never reached
// and one key, so that each call is the common path (one script call that
// updates the state). Besides ns/op each reports srv-µs/op, the time Redis
// spent running the scripts, which a loaded client machine does not
// distort. It lives here, not in guard/limit, so that the library's go.mod
// does not require redis_rate.
func BenchmarkGCRA(b *testing.B) {
	const many = 1_000_000 // per second: never reached
	ctx := context.Background()
	b.Run("asidekit", func(b *testing.B) {
		c := benchServer(b)
		lim, err := limit.NewGCRA(c, limit.GCRA{Rate: limit.PerSecond(many)}, &limit.Options{Namespace: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		testkit.ScriptLoop(b, c, func() error {
			_, err := lim.Allow(ctx, "bench")
			return err
		})
	})
	b.Run("redis_rate", func(b *testing.B) {
		c := benchServer(b)
		lim := redis_rate.NewLimiter(c)
		rate := redis_rate.PerSecond(many)
		testkit.ScriptLoop(b, c, func() error {
			_, err := lim.Allow(ctx, "bench", rate)
			return err
		})
	})
}

// benchServer starts a private redis-server and returns a client of it.
func benchServer(b *testing.B) *redis.Client {
	b.Helper()
	srv := testcontainers.NewRedisServer(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { _ = c.Close() })
	return c
}
