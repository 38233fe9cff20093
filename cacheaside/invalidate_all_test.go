package cacheaside_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

func TestEntity_InvalidateAll(t *testing.T) {
	t.Parallel()
	testInvalidateAll(t, testcontainers.Redis(t))
}

func TestEntity_InvalidateAll_cluster(t *testing.T) {
	t.Parallel()
	testInvalidateAll(t, testcontainers.RedisCluster(t))
}

// testInvalidateAll fills an entity with more ids than one batch (and ids
// that need escaping) next to entities whose names share its prefix, then
// checks that InvalidateAll empties it alone, in batches of at most 1000,
// and refuses the store of a load that was running.
func testInvalidateAll(t *testing.T, r *testcontainers.RedisNamespace) {
	ctx := context.Background()
	client := r.NewClient(t)
	pipes := &pipeSizes{}
	client.AddHook(pipes)
	c, err := cacheaside.New(client, &cacheaside.Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	newEnt := func(name string) *cacheaside.Entity[string] {
		e, err := cacheaside.NewEntity[string](c, name, cacheaside.Policy{Strategy: cacheaside.Mutex})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	user := newEnt("user")
	others := []*cacheaside.Entity[string]{newEnt("users"), newEnt("user.by.email"), newEnt("user:x")}

	load := func(ctx context.Context, ids []string) (map[string]string, error) {
		out := make(map[string]string, len(ids))
		for _, id := range ids {
			if id != "absent" { // cached as an absence
				out[id] = "v-" + id
			}
		}
		return out, nil
	}
	ids := []string{"a:b{c}*%?[x] y", "100%", "absent", "héllo"}
	for i := 0; i < 2500; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	for _, e := range append(others, user) {
		if _, err := e.GetMany(ctx, ids, load); err != nil {
			t.Fatal(err)
		}
	}
	if n := cached(t, client, user, ids); n != len(ids) {
		t.Fatalf("%d of %d user entries cached before InvalidateAll", n, len(ids))
	}

	// A load that began before InvalidateAll may not store what it read.
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := user.Get(ctx, "running", func(ctx context.Context, id string) (string, error) {
			close(started)
			<-release
			return "old", nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-started

	pipes.reset()
	if err := user.InvalidateAll(ctx); err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()

	if m := pipes.max(); m == 0 || m > 1000 {
		t.Fatalf("largest pipeline of InvalidateAll = %d commands, want 1..1000", m)
	}
	if n := cached(t, client, user, append(ids, "running")); n != 0 {
		t.Fatalf("%d user entries left after InvalidateAll", n)
	}
	for _, e := range others {
		if n := cached(t, client, e, ids); n != len(ids) {
			t.Fatalf("entity %q: %d of %d entries left, want all", e.Name(), n, len(ids))
		}
	}
	loads := 0
	v, err := user.Get(ctx, "7", func(ctx context.Context, id string) (string, error) {
		loads++
		return "new", nil
	})
	if err != nil || v != "new" || loads != 1 {
		t.Fatalf("Get after InvalidateAll = %q, %v with %d loads, want a new load", v, err, loads)
	}
	// Nothing cached: nothing to do.
	if err := newEnt("empty").InvalidateAll(ctx); err != nil {
		t.Fatal(err)
	}
}

// cached counts the ids of e whose entry is in Redis.
func cached(t *testing.T, client redis.UniversalClient, e *cacheaside.Entity[string], ids []string) int {
	t.Helper()
	ctx := context.Background()
	pipe := client.Pipeline()
	cmds := make([]*redis.IntCmd, len(ids))
	for i, id := range ids {
		key, err := e.Key(id)
		if err != nil {
			t.Fatal(err)
		}
		cmds[i] = pipe.Exists(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cmds {
		n += int(c.Val())
	}
	return n
}

// pipeSizes records the largest pipeline a client sent.
type pipeSizes struct {
	mu      sync.Mutex
	largest int
}

func (p *pipeSizes) reset() { p.mu.Lock(); p.largest = 0; p.mu.Unlock() }

func (p *pipeSizes) max() int { p.mu.Lock(); defer p.mu.Unlock(); return p.largest }

func (p *pipeSizes) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (p *pipeSizes) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (p *pipeSizes) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.mu.Lock()
		p.largest = max(p.largest, len(cmds))
		p.mu.Unlock()
		return next(ctx, cmds)
	}
}

// After a TRUNCATE every cached row is wrong at once: InvalidateAll drops
// the entity's ids without a list of them. It walks each node's keyspace,
// so it is for rare events; single writes call Invalidate.
func ExampleEntity_InvalidateAll() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, _ := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{NullTTL: time.Minute})
	ctx := context.Background()
	for _, id := range []string{"1", "2"} {
		u, _ := users.Get(ctx, id, loadUser)
		fmt.Println(u.Name)
	}

	defer func(rows map[int64]User) { db = rows }(db)
	db = map[int64]User{} // TRUNCATE users
	if err := users.InvalidateAll(ctx); err != nil {
		fmt.Println(err)
	}
	_, err := users.Get(ctx, "1", loadUser)
	fmt.Println(errors.Is(err, cacheaside.ErrNotFound))
	// Output:
	//   (db query for 1)
	// Ada
	//   (db query for 2)
	// Grace
	// true
}
