package asidekit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// guardedKit returns a Kit over a client that reaches Redis through a
// fault proxy, with the client settings RecommendedTimeout gives.
func guardedKit(t *testing.T, guard *asidekit.GuardOptions, cache *cacheaside.Options) (*asidekit.Kit, *faultproxy.Proxy, string) {
	return guardedKitWith(t, asidekit.Config{Guard: guard, Cache: cache})
}

// guardedKitWith is guardedKit with cfg's other fields; it sets Namespace
// and Redis.
func guardedKitWith(t *testing.T, cfg asidekit.Config) (*asidekit.Kit, *faultproxy.Proxy, string) {
	t.Helper()
	r := testcontainers.Redis(t)
	px, err := faultproxy.New(r.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	c := redis.NewClient(&redis.Options{Addr: px.Addr(), DialTimeout: asidekit.RecommendedTimeout,
		ReadTimeout: asidekit.RecommendedTimeout, WriteTimeout: asidekit.RecommendedTimeout, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	cfg.Namespace, cfg.Redis = r.Namespace+"svc", c
	kit, err := asidekit.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close() })
	return kit, px, r.Namespace
}

// The cache's failures open the node's breaker for every component: the
// limiter's first call after them fails open at once, without Redis. With
// the guard disabled (the switch) it pays its own call.
func TestKit_guard_sharedHealth(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		kit, px, _ := guardedKit(t, &asidekit.GuardOptions{Disabled: disabled, Threshold: 3, Cooldown: time.Minute}, nil)
		e, err := cacheaside.NewEntity[string](kit.Cache(), "products", cacheaside.Policy{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		lim, err := limit.NewGCRA(kit.Cache().Client(), limit.GCRA{Rate: limit.PerSecond(1000)}, kit.LimitOptions(&limit.Options{FailOpen: true}))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		load := func(context.Context, string) (string, error) { return "db", nil }
		px.Cut()
		for i := range 3 {
			if v, err := e.Get(ctx, "p1", load); err != nil || v != "db" {
				t.Fatalf("disabled %v: read %d during the cut: %q, %v", disabled, i, v, err)
			}
		}
		_, err = lim.Allow(ctx, "client")
		if !errors.Is(err, limit.ErrFailedOpen) {
			t.Fatalf("disabled %v: limiter during the cut: %v, want ErrFailedOpen", disabled, err)
		}
		if got := errors.Is(err, asidekit.ErrRedisDown); got == disabled {
			t.Errorf("disabled %v: the limiter's error is ErrRedisDown: %v (%v)", disabled, got, err)
		}
		if down := kit.RedisNodesDown(); (down == 1) == disabled {
			t.Errorf("disabled %v: RedisNodesDown = %d", disabled, down)
		}
		px.Heal()
	}
}

// An invalidation that failed during a cut is applied as soon as Redis
// answers again, and no read before or after returns the old value. The
// switch: a Cache breaker of its own (a long cooldown) keeps the Cache
// off Redis after the node is back, and the invalidation pending.
func TestKit_guard_recoversAtOnce(t *testing.T) {
	for _, own := range []bool{false, true} {
		var co *cacheaside.Options
		if own {
			co = &cacheaside.Options{BreakerThreshold: 1, BreakerCooldown: time.Minute}
		}
		kit, px, _ := guardedKit(t, &asidekit.GuardOptions{Threshold: 1, Cooldown: 20 * time.Millisecond}, co)
		e, err := cacheaside.NewEntity[string](kit.Cache(), "products", cacheaside.Policy{TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		value := "v1"
		load := func(context.Context, string) (string, error) { return value, nil }
		if v, err := e.Get(ctx, "p1", load); err != nil || v != "v1" {
			t.Fatalf("own %v: first read: %q, %v", own, v, err)
		}
		px.Cut()
		value = "v2" // the source of truth changes while Redis is cut
		if err := e.Invalidate(ctx, "p1"); !errors.Is(err, cacheaside.ErrInvalidationPending) {
			t.Fatalf("own %v: invalidate during the cut: %v, want ErrInvalidationPending", own, err)
		}
		check := func(when string) {
			t.Helper()
			if v, err := e.Get(ctx, "p1", load); err != nil || v != "v2" {
				t.Fatalf("own %v: read %s: %q, %v; want v2", own, when, v, err)
			}
		}
		check("during the cut")
		px.Heal()
		deadline := time.Now().Add(5 * time.Second)
		for kit.Cache().PendingInvalidations() > 0 && time.Now().Before(deadline) {
			check("after the heal, invalidation pending")
			time.Sleep(10 * time.Millisecond)
		}
		pending := kit.Cache().PendingInvalidations()
		if own {
			if pending == 0 {
				t.Errorf("own breaker: the invalidation was applied within its cooldown (the switch shows nothing)")
			}
			continue
		}
		if pending != 0 {
			t.Fatalf("the invalidation still pending 5 s after Redis came back")
		}
		check("after the invalidation")
		// Reads fill the cache again once the settle window that the cut
		// began has passed (cacheaside.Options.SettleWindow).
		for settled := time.Now().Add(time.Minute); kit.Cache().Settling(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(settled) {
				t.Fatal("still settling a minute after Redis came back")
			}
		}
		check("filling the cache")
		before := e.Stats().Hits
		check("from Redis")
		if e.Stats().Hits == before {
			t.Errorf("the read after recovery did not hit Redis: %+v", e.Stats())
		}
	}
}

// Under a Kit's guard the limiter and the generator have no breaker of
// their own (LimitOptions, Generator): they call Redis again as soon as
// the guard finds the node back, although their own breakers' cooldowns
// are an hour here. The switch: each given a breaker of its own
// (BreakerThreshold, BreakerFailures set), which stays open.
func TestKit_guard_limiterAndSeqgenResume(t *testing.T) {
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	for _, own := range []bool{false, true} {
		kit, px, _ := guardedKitDB(t, &asidekit.GuardOptions{Threshold: 1, Cooldown: 20 * time.Millisecond}, pg.DB)
		lo := &limit.Options{FailOpen: true, BreakerCooldown: time.Hour}
		so := &seqgen.Options{BreakerCooldown: time.Hour}
		if own {
			lo.BreakerThreshold, so.BreakerFailures = 1, 1
		}
		lim, err := limit.NewGCRA(kit.Cache().Client(), limit.GCRA{Rate: limit.PerSecond(1000)}, kit.LimitOptions(lo))
		if err != nil {
			t.Fatal(err)
		}
		gen, err := kit.Generator(so)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = gen.Close() })
		ctx := context.Background()
		if _, err := gen.Next(ctx, "ORD"); err != nil {
			t.Fatal(err)
		}
		px.Cut()
		// A call with no deadline shorter than the guard's opens its
		// breaker (the generator's own deadline may end its calls first:
		// a caller that gave up says nothing of the node; a limiter's
		// bound counts, see nodeguard.WithBound).
		if err := kit.Cache().Client().Ping(ctx).Err(); err == nil {
			t.Fatalf("own %v: ping during the cut answered", own)
		}
		// More calls than the packages' default thresholds (5 and 3),
		// enough to open their breakers had they their own.
		for range limit.DefaultBreakerThreshold + 1 {
			if _, err := lim.Allow(ctx, "client"); !errors.Is(err, limit.ErrFailedOpen) {
				t.Fatalf("own %v: limiter during the cut: %v, want ErrFailedOpen", own, err)
			}
			if _, err := gen.Next(ctx, "ORD"); err != nil {
				t.Fatalf("own %v: serial during the cut: %v", own, err)
			}
		}
		if kit.RedisNodesDown() != 1 {
			t.Fatalf("own %v: the guard's breaker did not open", own)
		}
		px.Heal()
		deadline := time.Now().Add(10 * time.Second)
		for kit.RedisNodesDown() != 0 { // the guard's prober finds the node back
			if time.Now().After(deadline) {
				t.Fatalf("own %v: the guard's breaker still open 10 s after the heal", own)
			}
			time.Sleep(5 * time.Millisecond)
		}
		_, limErr := lim.Allow(ctx, "client")
		fallbacks := gen.Stats().Fallbacks
		if _, err := gen.Next(ctx, "ORD"); err != nil {
			t.Fatal(err)
		}
		fromDB := gen.Stats().Fallbacks > fallbacks
		if own {
			if limErr == nil || !fromDB {
				t.Errorf("own breakers: limiter %v, serial from the DB %v: the switch shows nothing", limErr, fromDB)
			}
			continue
		}
		if limErr != nil {
			t.Errorf("limiter after the guard closed: %v, want a Redis answer", limErr)
		}
		if fromDB {
			t.Errorf("serial after the guard closed came from the DB, not Redis: %+v", gen.Stats())
		}
	}
}

// guardedKitDB is guardedKit with a database, for Generator.
func guardedKitDB(t *testing.T, guard *asidekit.GuardOptions, db *gorm.DB) (*asidekit.Kit, *faultproxy.Proxy, string) {
	return guardedKitWith(t, asidekit.Config{Guard: guard, DB: db})
}
