package cacheaside

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// roundTrips counts the commands (pipelines count once) a client sends,
// leaving out the handshake of new connections.
type roundTrips struct{ n atomic.Int64 }

func handshake(name string) bool { return name == "hello" || name == "client" }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// A round trip counts once its reply is in: a test that waits for the
// count to reach n knows that n calls were answered, not only sent (a
// call sent but not yet run by Redis could still see a later write).
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if !handshake(cmd.Name()) {
			h.n.Add(1)
		}
		return err
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if !handshake(cmds[0].Name()) {
			h.n.Add(1)
		}
		return err
	}
}

// countedCache returns a Cache on a new client of r, that client, and
// the counter of the round trips it sends.
func countedCache(t *testing.T, r *testcontainers.RedisNamespace) (*Cache, redis.UniversalClient, *roundTrips) {
	t.Helper()
	client := r.NewClient(t)
	rt := &roundTrips{}
	client.AddHook(rt)
	return newCache(t, client, r.Namespace, nil), client, rt
}

func testGetMany(t *testing.T, r *testcontainers.RedisNamespace) {
	c, client, rt := countedCache(t, r)
	e := newEntity[user](t, c, "user", Policy{NullTTL: time.Minute})
	ctx := context.Background()
	// Load the scripts on every node first, so that NOSCRIPT fallbacks do
	// not count.
	for _, s := range []*script.Script{versionScript, fillScript} {
		if err := s.Load(ctx, client).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var batches [][]string
	load := func(ctx context.Context, ids []string) (map[string]user, error) {
		mu.Lock()
		batches = append(batches, ids)
		mu.Unlock()
		out := map[string]user{}
		for _, id := range ids {
			if n, _ := strconv.Atoi(id); n%2 == 0 { // odd ids do not exist
				out[id] = user{ID: id}
			}
		}
		return out, nil
	}
	var ids []string
	for i := 0; i < 40; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	ids = append(ids, "0", "2", "1") // duplicates
	for round := 0; round < 2; round++ {
		rt.n.Store(0)
		got, err := e.GetMany(ctx, ids, load)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 20 {
			t.Fatalf("round %d: %d values, want the 20 even ids", round, len(got))
		}
		for id, u := range got {
			if u.ID != id {
				t.Fatalf("got[%s] = %+v", id, u)
			}
		}
		switch round {
		case 0:
			// MGET, version reads, store: three round trips.
			if n := rt.n.Load(); n != 3 {
				t.Fatalf("round trips on a cold batch = %d", n)
			}
		case 1:
			if n := rt.n.Load(); n != 1 {
				t.Fatalf("round trips on a warm batch = %d, want 1", n)
			}
		}
	}
	if len(batches) != 1 || len(batches[0]) != 40 {
		t.Fatalf("loader batches = %d (first of %d ids), want one of 40", len(batches), len(batches[0]))
	}
	if s := e.Stats(); s.Hits != 20 || s.NullHits != 20 || s.Loads != 1 {
		t.Fatalf("stats = %+v", s)
	}
	// Invalidated ids are loaded again, and only they.
	if err := e.Invalidate(ctx, "4", "5"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetMany(ctx, ids, load); err != nil {
		t.Fatal(err)
	}
	if len(batches) != 2 || len(batches[1]) != 2 {
		t.Fatalf("second load = %v, want [4 5]", batches[len(batches)-1])
	}
}

func TestEntity_GetMany(t *testing.T) { testGetMany(t, testcontainers.Redis(t)) }

func TestEntity_GetMany_cluster(t *testing.T) { testGetMany(t, testcontainers.RedisCluster(t)) }

func TestEntity_GetMany_filterAndVersions(t *testing.T) {
	r := testcontainers.Redis(t)
	bf := newTestBloom(100, 0.01)
	bf.Add("1")
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{Filter: bf})
	ctx := context.Background()
	read, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		got, err := e.GetMany(ctx, []string{"1", "2"}, func(ctx context.Context, ids []string) (map[string]user, error) {
			if len(ids) != 1 || ids[0] != "1" {
				t.Errorf("loader got %v; the filter rules out 2", ids)
			}
			close(read)
			<-gate
			return map[string]user{"1": {ID: "1", Ver: 1}}, nil
		})
		if err == nil && len(got) != 1 {
			t.Errorf("got %v", got)
		}
		done <- err
	}()
	<-read
	if err := e.Invalidate(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	close(gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	key, _ := e.Key("1")
	if r.Client.Exists(ctx, key).Val() != 0 {
		t.Fatal("a batch load that began before Invalidate stored its value")
	}
	if s := e.Stats(); s.RejectedSets != 1 || s.Filtered != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

// With AsyncRefresh, GetMany serves values past their logical expiry and
// refreshes them in the background, as one batch.
func TestEntity_GetMany_asyncRefresh(t *testing.T) {
	r := testcontainers.Redis(t)
	// A Grace of a minute: the stale values are still served however slow
	// the machine is between the expiry and the second GetMany.
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user",
		Policy{TTL: 400 * time.Millisecond, Grace: time.Minute, Jitter: -1, Strategy: AsyncRefresh})
	ctx := context.Background()
	var mu sync.Mutex
	var batches [][]string
	gen := 0
	load := func(ctx context.Context, ids []string) (map[string]user, error) {
		mu.Lock()
		defer mu.Unlock()
		batches = append(batches, ids)
		gen++
		out := map[string]user{}
		for _, id := range ids {
			out[id] = user{ID: id, Ver: gen}
		}
		return out, nil
	}
	ids := []string{"a", "b", "c"}
	if _, err := e.GetMany(ctx, ids, load); err != nil {
		t.Fatal(err)
	}
	time.Sleep(450 * time.Millisecond) // past the logical expiry: time must pass
	got, err := e.GetMany(ctx, ids, load)
	if err != nil || len(got) != 3 || got["a"].Ver != 1 {
		t.Fatalf("GetMany past expiry = %v, %v; want the stale values at once", got, err)
	}
	// The refresh counts itself once its store has returned: wait for the
	// count too, not only for the values.
	waitFor(t, 10*time.Second, func() bool {
		got, err := e.GetMany(ctx, ids, load)
		return err == nil && got["a"].Ver == 2 && got["c"].Ver == 2 && e.Stats().Refreshes == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if len(batches) != 2 || len(batches[1]) != 3 {
		t.Fatalf("loader batches = %v, want the warm-up and one refresh of all three", batches)
	}
	if s := e.Stats(); s.Refreshes != 3 || s.StaleServed < 3 {
		t.Fatalf("stats = %+v", s)
	}
}
