package cacheaside_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
)

// peekEntity returns an entity "user" of strings on r, with a cached
// "not found" of a minute, and the client it uses (with a command counter).
func peekEntity(t *testing.T, r *testcontainers.RedisNamespace, name string) (*cacheaside.Entity[string], redis.UniversalClient) {
	t.Helper()
	client := r.NewClient(t)
	c, err := cacheaside.New(client, &cacheaside.Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	e, err := cacheaside.NewEntity[string](c, name, cacheaside.Policy{TTL: time.Hour, NullTTL: time.Minute, Strategy: cacheaside.Mutex})
	if err != nil {
		t.Fatal(err)
	}
	return e, client
}

func loadString(_ context.Context, id string) (string, error) {
	if id == "absent" {
		return "", cacheaside.ErrNotFound
	}
	return "v-" + id, nil
}

func TestEntity_Peek(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e, client := peekEntity(t, r, "user")
	ctx := context.Background()

	p, err := e.Peek(ctx, "42")
	if err != nil || p.State != cacheaside.PeekAbsent || p.Raw != nil || p.Version != "" || p.Lease != "" || p.TTL != 0 {
		t.Fatalf("Peek(uncached) = %+v, %v; want absent", p, err)
	}
	if _, err := e.Get(ctx, "42", loadString); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ctx, "absent", loadString); !errors.Is(err, cacheaside.ErrNotFound) {
		t.Fatal(err)
	}
	before := e.Stats()

	p, err = e.Peek(ctx, "42")
	if err != nil || p.State != cacheaside.PeekValue || p.Version == "" || p.Lease != "" {
		t.Fatalf("Peek(cached) = %+v, %v", p, err)
	}
	if p.TTL <= 0 || p.TTL > 2*time.Hour || time.Until(p.Expiry) <= 0 {
		t.Errorf("TTL %v, expiry %v: want the entry's remaining life", p.TTL, p.Expiry)
	}
	if v, err := e.Decode(p); err != nil || v != "v-42" {
		t.Errorf("Decode = %q, %v; want v-42", v, err)
	}
	if b, err := e.Encode("v-42"); err != nil || string(b) != string(p.Value) {
		t.Errorf("Encode = %q, %v; want the cached %q", b, err, p.Value)
	}
	key, _ := e.Key("42")
	if p.Key != key || len(p.Raw) <= len(p.Value) {
		t.Errorf("key %q raw %d value %d", p.Key, len(p.Raw), len(p.Value))
	}

	p, err = e.Peek(ctx, "absent")
	if err != nil || p.State != cacheaside.PeekNotFound || p.Value != nil || p.Version == "" {
		t.Fatalf("Peek(cached absence) = %+v, %v", p, err)
	}
	if _, err := e.Decode(p); !errors.Is(err, cacheaside.ErrNotFound) {
		t.Errorf("Decode(not found) = %v, want ErrNotFound", err)
	}

	// A lease with no entry: a load running in another process.
	lkey, _ := e.Key("7")
	if err := client.Set(ctx, lkey+":lock", "holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	p, err = e.Peek(ctx, "7")
	if err != nil || p.State != cacheaside.PeekLeaseOnly || p.Lease != "holder" || p.LeaseTTL <= 0 {
		t.Fatalf("Peek(lease) = %+v, %v", p, err)
	}

	// A foreign entry is reported, not deleted.
	ckey, _ := e.Key("junk")
	if err := client.Set(ctx, ckey, "not ours", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p, err = e.Peek(ctx, "junk")
	if err != nil || p.State != cacheaside.PeekCorrupt || string(p.Raw) != "not ours" || p.TTL != -1 {
		t.Fatalf("Peek(corrupt) = %+v, %v", p, err)
	}
	if n, _ := client.Exists(ctx, ckey).Result(); n != 1 {
		t.Error("Peek deleted a corrupt entry")
	}

	// No side effect: no counter moved, no lease or version was made.
	if after := e.Stats(); after != before {
		t.Errorf("Stats moved: %+v -> %+v", before, after)
	}
	if n, _ := client.Exists(ctx, lkey, lkey+":ver").Result(); n != 0 {
		t.Errorf("Peek made %d keys", n)
	}
	for _, s := range []cacheaside.PeekState{cacheaside.PeekAbsent, cacheaside.PeekValue, cacheaside.PeekNotFound, cacheaside.PeekLeaseOnly, cacheaside.PeekCorrupt, 9} {
		if s.String() == "" {
			t.Errorf("PeekState(%d) has no name", s)
		}
	}
}

func TestEntity_Peek_oneRoundTrip(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e, client := peekEntity(t, r, "user")
	ctx := context.Background()
	if _, err := e.Get(ctx, "1", loadString); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Peek(ctx, "1"); err != nil { // loads the script
		t.Fatal(err)
	}
	trips := &roundTrips{}
	client.AddHook(trips)
	if _, err := e.Peek(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	if got := trips.n.Load(); got != 1 {
		t.Errorf("Peek cost %d round trips, want 1", got)
	}
}

func TestEntity_Peek_badInput(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e, _ := peekEntity(t, r, "user")
	if _, err := e.Peek(context.Background(), ""); !errors.Is(err, cacheaside.ErrInvalidID) {
		t.Errorf("Peek(\"\") = %v, want ErrInvalidID", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Peek(ctx, "1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Peek(cancelled) = %v, want context.Canceled", err)
	}
	if _, _, err := e.SampleIDs(ctx, cacheaside.Cursor{}, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("SampleIDs(cancelled) = %v, want context.Canceled", err)
	}
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	c, _ := cacheaside.New(dead, nil)
	t.Cleanup(func() { _ = c.Close() })
	de, _ := cacheaside.NewEntity[string](c, "user", cacheaside.Policy{})
	if _, err := de.Peek(context.Background(), "1"); err == nil {
		t.Error("Peek with Redis down: no error")
	}
	if _, _, err := de.SampleIDs(context.Background(), cacheaside.Cursor{}, 10); err == nil {
		t.Error("SampleIDs with Redis down: no error")
	}
}

func TestEntity_SampleIDs(t *testing.T) {
	t.Parallel()
	testSampleIDs(t, testcontainers.Redis(t))
}

func TestEntity_SampleIDs_cluster(t *testing.T) {
	t.Parallel()
	testSampleIDs(t, testcontainers.RedisCluster(t))
}

// testSampleIDs caches ids (some that need escaping, one absence) next to
// entities whose names share the prefix, and walks the entity to the end:
// every cached id comes back, nothing else does.
func testSampleIDs(t *testing.T, r *testcontainers.RedisNamespace) {
	ctx := context.Background()
	e, _ := peekEntity(t, r, "user")
	others := []*cacheaside.Entity[string]{}
	for _, name := range []string{"users", "user.by.email", "user:x"} {
		o, _ := peekEntity(t, r, name)
		others = append(others, o)
	}
	want := []string{"a:b{c}*%?[x] y", "100%", "absent", "héllo"}
	for i := 0; i < 300; i++ {
		want = append(want, strconv.Itoa(i))
	}
	for _, id := range want {
		if _, err := e.Get(ctx, id, loadString); err != nil && !errors.Is(err, cacheaside.ErrNotFound) {
			t.Fatal(err)
		}
		for _, o := range others {
			_, _ = o.Get(ctx, "other-"+id, loadString)
		}
	}
	// a lease only: no entry, so not sampled
	lkey, _ := e.Key("leased")
	if err := r.Client.Set(ctx, lkey+":lock", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	seen := map[string]int{}
	var cur cacheaside.Cursor
	calls := 0
	for !cur.Done() {
		ids, next, err := e.SampleIDs(ctx, cur, 50)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			seen[id]++
		}
		cur = next
		if calls++; calls > 10000 {
			t.Fatal("the walk does not end")
		}
	}
	if ids, _, err := e.SampleIDs(ctx, cur, 50); err != nil || len(ids) != 0 {
		t.Errorf("SampleIDs(done) = %v, %v", ids, err)
	}
	var got []string
	for id := range seen {
		got = append(got, id)
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(got) != len(want) {
		t.Fatalf("sampled %d ids, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("sampled %q, want %q", got[i], want[i])
		}
	}
	if calls < 2 {
		t.Errorf("a walk of %d ids took %d call(s) with count 50", len(want), calls)
	}
}

// roundTrips counts the commands and pipelines a client sends.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(1); return next(ctx, cmds) }
}

// Peek shows what Redis holds for an id without changing it: no lease, no
// load, no counter.
func ExampleEntity_Peek() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, _ := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{TTL: time.Hour})
	ctx := context.Background()

	p, _ := users.Peek(ctx, "1")
	fmt.Println(p.State)
	_, _ = users.Get(ctx, "1", loadUser)
	p, _ = users.Peek(ctx, "1")
	u, _ := users.Decode(p)
	fmt.Println(p.State, u.Name, p.Version != "")
	// Output:
	// absent
	//   (db query for 1)
	// value Ada true
}
