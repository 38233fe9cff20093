package chaos

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A killed redis-server restarts empty, on the same address.
func TestRedisServer_restartEmpty(t *testing.T) {
	ctx := context.Background()
	s, err := startRedis(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.kill()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING to a killed server succeeded")
	}
	if err := s.restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS after the restart = %d, %v; want 0 (restarted empty)", n, err)
	}
}
