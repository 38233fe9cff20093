package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// testRedisLink starts a private redis-server and a proxy in front of it,
// and returns a client through the proxy.
func testRedisLink(t *testing.T) (*redisServer, *proxy, *redis.Client) {
	t.Helper()
	ctx := context.Background()
	s, err := startRedis(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	p := testProxy(t, s.Addr)
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	return s, p, c
}

// testProxy starts a proxy in front of upstream, closed at cleanup.
func testProxy(t *testing.T, upstream string) *proxy {
	t.Helper()
	p, err := newProxy(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestProxy_cutAndHeal(t *testing.T) {
	_, p, c := testRedisLink(t)
	ctx := context.Background()
	p.Cut()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING through a cut link succeeded")
	}
	p.Heal()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Heal: %v", err)
	}
}

func TestProxy_stallHoldsUntilHealed(t *testing.T) {
	_, p, c := testRedisLink(t)
	ctx := context.Background()
	p.Stall()
	if err := c.Set(ctx, "k", "stalled", 0).Err(); err == nil {
		t.Fatal("SET through a stalled link returned")
	}
	// The client closed its connection on the timeout; heal only once the
	// proxy saw that close (a FIN still in flight would race the Heal).
	for deadline := time.Now().Add(30 * time.Second); p.links() > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d links still open 30s after the client gave up", p.links())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.Heal()
	// The SET held in the stall belonged to a connection the client
	// closed on its timeout: it was dropped, never delivered late.
	if got, err := c.Get(ctx, "k").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Heal = %q, %v; want the stalled SET dropped", got, err)
	}
}

func TestProxy_slow(t *testing.T) {
	_, p, c := testRedisLink(t)
	ctx := context.Background()
	p.Slow(50 * time.Millisecond)
	start := time.Now()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("PING through a 50ms-slow link took %v, want at least 100ms (both ways)", d)
	}
}

func TestRedisServer_restartEmpty(t *testing.T) {
	s, _, c := testRedisLink(t)
	ctx := context.Background()
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

// TestProxy_dropCommitReply: the COMMIT reaches PostgreSQL, the client
// gets an error, and the row is written.
func TestProxy_dropCommitReply(t *testing.T) {
	ctx := context.Background()
	e, err := openEnv(ctx, testcontainers.Postgres(t).DSN, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	p := testProxy(t, e.pgAddr)
	db, err := openDB(e.dsnVia(p.Addr()), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	if err := db.Exec("SELECT 1").Error; err != nil {
		t.Fatal(err)
	}
	p.DropCommitReplies()
	err = db.WithContext(ctx).Create(&Item{ID: 1, Version: 7, Payload: "v7"}).Error
	if err == nil {
		t.Fatal("the INSERT's transaction returned nil although its COMMIT reply was dropped")
	}
	var got Item
	if err := e.db.WithContext(ctx).Take(&got, 1).Error; err != nil || got.Version != 7 {
		t.Fatalf("row = %+v, %v; want version 7 committed", got, err)
	}
	if p.dropped.Load() == 0 {
		t.Fatal("no reply counted as dropped")
	}
}
