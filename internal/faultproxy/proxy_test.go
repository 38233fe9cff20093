package faultproxy_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// start returns a proxy in front of upstream, closed at cleanup.
func start(t *testing.T, upstream string) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(upstream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// redisLink starts a private redis-server and a proxy in front of it, and
// returns a client through the proxy that gives up quickly.
func redisLink(t *testing.T) (*faultproxy.Proxy, *redis.Client) {
	t.Helper()
	p := start(t, testcontainers.NewRedisServer(t).Addr)
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, ReadTimeout: 300 * time.Millisecond, DialTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	return p, c
}

func TestProxy_cutAndHeal(t *testing.T) {
	p, c := redisLink(t)
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
	p, c := redisLink(t)
	ctx := context.Background()
	p.Stall()
	if err := c.Set(ctx, "k", "stalled", 0).Err(); err == nil {
		t.Fatal("SET through a stalled link returned")
	}
	// The client closed its connection on the timeout; heal only once the
	// proxy saw that close (a FIN still in flight would race the Heal).
	for deadline := time.Now().Add(30 * time.Second); p.Links() > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d links still open 30s after the client gave up", p.Links())
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
	p, c := redisLink(t)
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

// The COMMIT reaches PostgreSQL, the client gets an error, and the row is
// written.
func TestProxy_dropCommitReply(t *testing.T) {
	ctx := context.Background()
	pg := testcontainers.Postgres(t)
	u, err := url.Parse(pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, u.Host)
	u.Host = p.Addr()
	db, err := gorm.Open(postgres.Open(u.String()), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	type item struct {
		ID      int64 `gorm:"primaryKey;autoIncrement:false"`
		Version int64
	}
	if err := pg.DB.AutoMigrate(&item{}); err != nil {
		t.Fatal(err)
	}
	p.DropCommitReplies()
	if err := db.WithContext(ctx).Create(&item{ID: 1, Version: 7}).Error; err == nil {
		t.Fatal("the INSERT's transaction returned nil although its COMMIT reply was dropped")
	}
	var got item
	if err := pg.DB.WithContext(ctx).Take(&got, 1).Error; err != nil || got.Version != 7 {
		t.Fatalf("row = %+v, %v; want version 7 committed", got, err)
	}
	if p.Dropped() == 0 {
		t.Fatal("no reply counted as dropped")
	}
}
