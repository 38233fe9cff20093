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
// (its writes never served, invalidation_max_ms far past Local.TTL). And
// broadcast/plain_del, whose readers see a DEL only when their local
// entries expire, waits for that: no write is left unserved at the end
// (the run used to end 200ms after the last write, every write unserved
// here, their delays cut short).
func TestLocalVariant_plainDel(t *testing.T) {
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
		st, err := driveLocalVariant(ctx, env, p, v)
		if err != nil {
			t.Fatal(err)
		}
		// The writer's, each reader's and the outside program's.
		if got, want := clientCount(env)-before, p.Instances+2; got != want {
			t.Errorf("%s: %d Redis clients made for %d writes, want %d", v.name, got, p.Writes, want)
		}
		if st.errors != 0 || st.unseen != 0 {
			t.Errorf("%s: %d errors, %d of %d writes unserved at the end", v.name, st.errors, st.unseen, len(st.delays))
		}
	}
}

func clientCount(env *Env) int {
	env.mu.Lock()
	defer env.mu.Unlock()
	return len(env.clients)
}
