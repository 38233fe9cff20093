package peers

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/testcontainers"
)

// realEnv opens an Env on the test's PostgreSQL server and Redis.
func realEnv(t *testing.T) *benchmarks.Env {
	t.Helper()
	pg := testcontainers.Postgres(t)
	rd := testcontainers.Redis(t)
	env, err := benchmarks.Open(context.Background(), benchmarks.Config{RedisAddr: rd.Addrs[0], PostgresDSN: pg.DSN, DBPool: 8})
	if err != nil {
		t.Fatal(err)
	}
	if env.Embedded() {
		t.Fatalf("backend %s is embedded", env.Backend)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return env
}

// countingLoader wraps the Env's loader and counts its calls.
func countingLoader(env *benchmarks.Env, calls *atomic.Int64) benchmarks.Loader {
	load := env.NewLoader()
	return func(ctx context.Context, id int64) (benchmarks.Value, error) {
		calls.Add(1)
		return load(ctx, id)
	}
}

// TestSubjects_readCacheNotFound builds every peer Subject of the
// penetration set and checks that each reads a row from PostgreSQL, serves
// it again from the cache (one loader call), writes under its namespace,
// and maps absence to benchmarks.ErrNotFound — cached by every peer but
// go-redis/cache, which has no null caching.
func TestSubjects_readCacheNotFound(t *testing.T) {
	env := realEnv(t)
	ctx := context.Background()
	want := sample.User{ID: 7, Email: "seven@example.com", Name: "Seven"}
	if err := env.DB.Create(&want).Error; err != nil {
		t.Fatal(err)
	}
	const absent = 1_000_007
	for _, v := range PenetrationVariants(benchmarks.PenetrationParams{NullTTL: time.Minute}) {
		t.Run(v.Name, func(t *testing.T) {
			var calls atomic.Int64
			ns := env.Sub(strings.NewReplacer("/", "-", "+", "-").Replace(v.Name))
			client := env.NewClient()
			s, err := v.New(benchmarks.Setup{Env: env, Client: client, Namespace: ns,
				Load: countingLoader(env, &calls), TTL: time.Minute, Scenario: "penetration"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { closeSubject(s) })

			for i := 0; i < 2; i++ {
				got, err := s.Get(ctx, want.ID)
				if err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
				if got.ID != want.ID || got.Email != want.Email || got.Name != want.Name {
					t.Fatalf("read %d: got %+v, want %+v", i, got, want)
				}
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("loader called %d times for two reads of one row, want 1", n)
			}
			it := client.Scan(ctx, 0, ns+":*", 1000).Iterator()
			found := it.Next(ctx)
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if !found {
				t.Errorf("no key under %s:*", ns)
			}

			calls.Store(0)
			for i := 0; i < 2; i++ {
				if _, err := s.Get(ctx, absent); !errors.Is(err, benchmarks.ErrNotFound) {
					t.Fatalf("absent read %d: err = %v, want benchmarks.ErrNotFound", i, err)
				}
			}
			wantLoads := int64(1)
			if v.Name == GoRedisCache || v.Name == GoRedisCacheLocal {
				wantLoads = 2
			}
			if n := calls.Load(); n != wantLoads {
				t.Errorf("loader called %d times for two reads of an absent id, want %d", n, wantLoads)
			}
		})
	}
}

// TestGoZero_roundTripsCounted checks that go-zero's commands run on the
// Setup's client (the forwarding hook): a warm read is exactly one round
// trip on the Env's counter.
func TestGoZero_roundTripsCounted(t *testing.T) {
	env := realEnv(t)
	ctx := context.Background()
	if err := env.DB.Create(&sample.User{ID: 3, Email: "three@example.com", Name: "Three"}).Error; err != nil {
		t.Fatal(err)
	}
	s, err := newGoZero(benchmarks.Setup{Env: env, Client: env.NewClient(), Namespace: env.Sub("gozero"),
		Load: env.NewLoader(), TTL: time.Minute}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, 3); err != nil {
		t.Fatal(err)
	}
	before := env.Counts()
	if _, err := s.Get(ctx, 3); err != nil {
		t.Fatal(err)
	}
	after := env.Counts()
	if d := after.RedisRoundTrips - before.RedisRoundTrips; d != 1 {
		t.Errorf("warm go-zero read made %d counted round trips, want 1", d)
	}
	if d := after.DBStatements - before.DBStatements; d != 0 {
		t.Errorf("warm go-zero read made %d DB statements, want 0", d)
	}
}

// TestRockscache_breakdownSharedRebuild runs the breakdown workload on
// rockscache alone: its lock in Redis lets one process of two rebuild the
// hot key per expiry.
func TestRockscache_breakdownSharedRebuild(t *testing.T) {
	env := realEnv(t)
	p := benchmarks.BreakdownParams{Load: benchmarks.Load{Instances: 2, Goroutines: 4},
		TTL: 2 * time.Second, Duration: 3500 * time.Millisecond, LoadDelay: 20 * time.Millisecond}
	var vs []benchmarks.Variant
	for _, v := range BreakdownVariants(p) {
		if v.Name == Rockscache {
			vs = append(vs, v)
		}
	}
	res, err := benchmarks.RunBreakdown(context.Background(), env, p, vs)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Row(Rockscache)
	exp, _ := r.Get(benchmarks.MetricExpiries)
	per, _ := r.Get(benchmarks.MetricDBLoadsPerExpiry)
	errs, _ := r.Get(benchmarks.MetricErrors)
	if exp < 1 || per != 1 || errs != 0 {
		t.Errorf("rockscache: %v expiries, %v loads per expiry, %v errors; want ≥ 1, 1, 0", exp, per, errs)
	}
}

func closeSubject(s benchmarks.Subject) {
	if c, ok := s.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
