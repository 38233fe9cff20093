package benchmarks

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
)

// The plain DELs of a variant go through one client: a client per DEL
// leaked a pool each until the Env closed, and a default-size run reached
// Redis's maxclients in its last plain_del variant, whose DELs then failed
// (its writes never served, invalidation_max_ms far past Local.TTL).
func TestLocalVariant_plainDelOneClient(t *testing.T) {
	pg := testcontainers.Postgres(t)
	rd := testcontainers.Redis(t)
	ctx := context.Background()
	env, err := Open(ctx, Config{RedisAddr: rd.Addrs[0], PostgresDSN: pg.DSN, DBPool: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	p := LocalInvalidationParams{Load: Load{Instances: 2, Goroutines: 1}, Keys: 4, Writes: 40,
		WriteEvery: 5 * time.Millisecond, ReadEvery: time.Millisecond, LocalTTL: time.Second}
	for _, v := range localVariants() {
		if !v.plain || v.mode != cacheaside.LocalBroadcast {
			continue
		}
		before := clientCount(env)
		row, err := runLocalVariant(ctx, env, p, v)
		if err != nil {
			t.Fatal(err)
		}
		// The writer's, each reader's and the outside program's.
		if got, want := clientCount(env)-before, p.Instances+2; got != want {
			t.Errorf("%s: %d Redis clients made for %d writes, want %d", v.name, got, p.Writes, want)
		}
		if got, _ := row.Get(MetricErrors); got != 0 {
			t.Errorf("%s: errors = %v", v.name, got)
		}
	}
}

func clientCount(env *Env) int {
	env.mu.Lock()
	defer env.mu.Unlock()
	return len(env.clients)
}
