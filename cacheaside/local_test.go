package cacheaside

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// backends runs f on a standalone Redis and on a Redis Cluster.
func backends(t *testing.T, f func(t *testing.T, r *testcontainers.RedisNamespace)) {
	t.Run("standalone", func(t *testing.T) { f(t, testcontainers.Redis(t)) })
	t.Run("cluster", func(t *testing.T) { f(t, testcontainers.RedisCluster(t)) })
}

// db is a source of truth: each id has a version, bumped by writes.
type db struct {
	mu   sync.Mutex
	ver  map[string]int
	gone map[string]bool
}

func newDB() *db { return &db{ver: map[string]int{}, gone: map[string]bool{}} }

func (d *db) load(_ context.Context, id string) (user, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone[id] {
		return user{}, ErrNotFound
	}
	return user{ID: id, Ver: d.ver[id]}, nil
}

func (d *db) bump(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ver[id]++
	return d.ver[id]
}

// nearProcess is one process with a near cache on entity "user".
func nearProcess(t *testing.T, r *testcontainers.RedisNamespace, p Policy, o *Options) (*Cache, *Entity[user]) {
	t.Helper()
	if p.Local == nil {
		p.Local = &LocalPolicy{TTL: time.Hour}
	}
	c := newCache(t, r.NewClient(t), r.Namespace, o)
	e := newEntity[user](t, c, "user", p)
	waitLocal(t, c)
	return c, e
}

func waitLocal(t *testing.T, c *Cache) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitLocal(ctx); err != nil {
		t.Fatalf("near cache not up: %v", err)
	}
}

// warm reads id until it is served from the near cache, and returns it.
func warm(t *testing.T, e *Entity[user], id string, load func(context.Context, string) (user, error)) user {
	t.Helper()
	var v user
	waitFor(t, 10*time.Second, func() bool {
		before := e.Stats().LocalHits
		var err error
		if v, err = e.Get(context.Background(), id, load); err != nil {
			t.Fatal(err)
		}
		return e.Stats().LocalHits > before
	})
	return v
}

// A write in one process reaches the near cache of another: through
// Invalidate, through Set, and by a plain SET or DEL from outside.
func TestLocal_crossProcess(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
		src := newDB()
		_, reader := nearProcess(t, r, Policy{}, nil)
		_, writer := nearProcess(t, r, Policy{}, nil)
		ctx := context.Background()
		id := "1"
		served := func(want int) func() bool {
			return func() bool {
				v, err := reader.Get(ctx, id, src.load)
				return err == nil && v.Ver == want
			}
		}
		if v := warm(t, reader, id, src.load); v.Ver != 0 {
			t.Fatalf("warm: %+v", v)
		}

		// Invalidate after the source changed.
		ver := src.bump(id)
		if err := writer.Invalidate(ctx, id); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, served(ver))
		warm(t, reader, id, src.load)

		// Set.
		ver = src.bump(id)
		if err := writer.Set(ctx, id, user{ID: id, Ver: ver}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, served(ver))
		warm(t, reader, id, src.load)

		// A plain DEL from outside asidekit.
		key, _ := reader.Key(id)
		ver = src.bump(id)
		if err := r.Client.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, served(ver))
		warm(t, reader, id, src.load)

		// A plain SET of a foreign value: a corrupt entry, hence a load.
		ver = src.bump(id)
		if err := r.Client.Set(ctx, key, "foreign", 0).Err(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, served(ver))
		if s := reader.Stats(); s.LocalInvalidations < 4 || s.LocalHits < 4 {
			t.Fatalf("stats: %+v", s)
		}
	})
}

// The writing process reads its own writes at once, while concurrent
// readers keep filling its near cache.
func TestLocal_readYourWrites(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
		src := newDB()
		_, e := nearProcess(t, r, Policy{}, nil)
		ctx := context.Background()
		ids := []string{"a", "b", "c"}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := e.Get(ctx, ids[j%len(ids)], src.load); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		for i := 0; i < 100; i++ {
			id := ids[i%len(ids)]
			ver := src.bump(id)
			var err error
			if i%2 == 0 {
				err = e.Invalidate(ctx, id)
			} else {
				err = e.Set(ctx, id, user{ID: id, Ver: ver})
			}
			if err != nil {
				t.Fatal(err)
			}
			if v, err := e.Get(ctx, id, src.load); err != nil || v.Ver < ver {
				t.Fatalf("write %d of %s: read %+v, %v after the write of version %d", i, id, v, err, ver)
			}
			m, err := e.GetMany(ctx, ids, func(ctx context.Context, ids []string) (map[string]user, error) {
				out := map[string]user{}
				for _, id := range ids {
					out[id], _ = src.load(ctx, id)
				}
				return out, nil
			})
			if err != nil || m[id].Ver < ver {
				t.Fatalf("write %d of %s: GetMany read %+v, %v after the write of version %d", i, id, m[id], err, ver)
			}
		}
		close(stop)
		wg.Wait()
		if s := e.Stats(); s.LocalHits == 0 {
			t.Fatalf("no local hit: %+v", s)
		}
	})
}

// Readers racing with writes of another process never keep a stale value:
// once the writes stop, every reader ends up with the last one, although
// local entries would live an hour.
func TestLocal_noStaleFill(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
		src := newDB()
		_, reader := nearProcess(t, r, Policy{}, nil)
		_, writer := nearProcess(t, r, Policy{}, nil)
		ctx := context.Background()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := reader.Get(ctx, "hot", src.load); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		var last int
		for i := 0; i < 100; i++ {
			last = src.bump("hot")
			if err := writer.Set(ctx, "hot", user{ID: "hot", Ver: last}); err != nil {
				t.Fatal(err)
			}
		}
		close(stop)
		wg.Wait()
		waitFor(t, 10*time.Second, func() bool {
			v, err := reader.Get(ctx, "hot", src.load)
			return err == nil && v.Ver == last
		})
		for i := 0; i < 100; i++ { // and it stays so
			if v, _ := reader.Get(ctx, "hot", src.load); v.Ver != last {
				t.Fatalf("read %+v after %d", v, last)
			}
		}
	})
}

// A local entry never outlives Local.TTL.
func TestLocal_ttlCap(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	src := newDB()
	const ttl = 50 * time.Millisecond
	_, e := nearProcess(t, r, Policy{Local: &LocalPolicy{TTL: ttl}}, nil)
	checkLocalDeadline(t, e, src, func(time.Time) time.Time { return time.Now().Add(ttl) })
}

// A local entry never outlives the Redis entry it came from.
func TestLocal_remoteExpiryCap(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
		src := newDB()
		_, e := nearProcess(t, r, Policy{TTL: 100 * time.Millisecond, Jitter: -1}, nil)
		key, _ := e.Key("1")
		checkLocalDeadline(t, e, src, func(time.Time) time.Time {
			b, err := r.Client.Get(context.Background(), key).Bytes()
			if errors.Is(err, redis.Nil) { // expired already
				return time.Now()
			}
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := decodeEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			return time.UnixMilli(h.expiry)
		})
	})
}

// checkLocalDeadline warms id "1" and reads it until a read goes past the
// near cache, failing if a local hit began after deadline (computed once
// the entry is local).
func checkLocalDeadline(t *testing.T, e *Entity[user], src *db, deadline func(time.Time) time.Time) {
	t.Helper()
	ctx := context.Background()
	warm(t, e, "1", src.load)
	limit := deadline(time.Now())
	for {
		hits, began := e.Stats().LocalHits, time.Now()
		if _, err := e.Get(ctx, "1", src.load); err != nil {
			t.Fatal(err)
		}
		if e.Stats().LocalHits == hits {
			return // served past the near cache
		}
		if began.After(limit) {
			t.Fatalf("local hit at %v, past the deadline %v", began, limit)
		}
	}
}

// "Not found" answers are kept locally with Local.NullTTL, and dropped
// when the id is created.
func TestLocal_null(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	src := newDB()
	src.gone["x"] = true
	p := Policy{NullTTL: time.Hour, Local: &LocalPolicy{TTL: time.Hour, NullTTL: time.Hour}}
	_, reader := nearProcess(t, r, p, nil)
	_, writer := nearProcess(t, r, p, nil)
	ctx := context.Background()
	waitFor(t, 10*time.Second, func() bool {
		hits := reader.Stats().LocalHits
		_, err := reader.Get(ctx, "x", src.load)
		mustNotFound(t, err)
		return reader.Stats().LocalHits > hits
	})
	src.mu.Lock()
	delete(src.gone, "x")
	src.mu.Unlock()
	if err := writer.Invalidate(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		_, err := reader.Get(ctx, "x", src.load)
		return err == nil
	})
}

// LocalBroadcast carries the writes made through asidekit.
func TestLocal_broadcast(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
		src := newDB()
		o := &Options{LocalInvalidation: LocalBroadcast}
		_, reader := nearProcess(t, r, Policy{}, o)
		_, writer := nearProcess(t, r, Policy{}, o)
		ctx := context.Background()
		warm(t, reader, "1", src.load)
		ver := src.bump("1")
		if err := writer.Invalidate(ctx, "1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool {
			v, err := reader.Get(ctx, "1", src.load)
			return err == nil && v.Ver == ver
		})
	})
}

func TestLocal_badConfig(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := newCache(t, r.Client, r.Namespace, nil)
	if _, err := NewEntity[user](c, "user", Policy{Local: &LocalPolicy{TTL: -1}}); err == nil {
		t.Fatal("negative Local.TTL accepted")
	}
	if _, err := New(r.Client, &Options{LocalInvalidation: 7}); err == nil {
		t.Fatal("unknown LocalInvalidation accepted")
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": r.Addrs[0]}})
	defer ring.Close()
	rc := newCache(t, ring, r.Namespace, nil)
	if _, err := NewEntity[user](rc, "user", Policy{Local: &LocalPolicy{}}); !errors.Is(err, ErrLocalUnsupported) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("ring: err = %v, want ErrLocalUnsupported and ErrInvalid", err)
	}
	e := newEntity[user](t, c, "user", Policy{Local: &LocalPolicy{}})
	if lp := e.Policy().Local; lp.MaxEntries != DefaultLocalMaxEntries || lp.TTL != DefaultLocalTTL || lp.NullTTL != 0 {
		t.Fatalf("defaults: %+v", lp)
	}
}

// A near cache hit allocates nothing: Get looks the escaped id up before it
// builds the Redis key, which allocated on every hit, and a process
// serving from its near cache paid for that in garbage collections (on a
// small machine, milliseconds on the reads and invalidations in flight).
func TestLocal_hitAllocs(t *testing.T) {
	r := testcontainers.Redis(t)
	src := newDB()
	_, e := nearProcess(t, r, Policy{}, nil)
	// A method value made once: made per call, it would allocate.
	load := src.load
	for _, id := range []string{"42", "a b"} { // plain, and escaped
		warm(t, e, id, load)
		ctx := context.Background()
		hits := e.Stats().LocalHits
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := e.Get(ctx, id, load); err != nil {
				t.Fatal(err)
			}
		})
		if got := e.Stats().LocalHits - hits; got < 100 {
			t.Fatalf("id %q: %d local hits in 101 Gets, want all", id, got)
		}
		if want := map[string]float64{"42": 0, "a b": 1}[id]; allocs > want {
			t.Errorf("id %q: %v allocations per local hit, want %v", id, allocs, want)
		}
	}
}
