package cacheaside

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// A Mutex waiter woken by the holder's store takes the value from the
// announcement: no Redis command after the wake-up. A value too large to
// be announced costs the waiter one more lease call.
func TestMutex_announcedValue(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		for _, c := range []struct {
			size  int
			after int64
		}{{10, 0}, {maxAnnounced, 1}} {
			t.Run(name+"/"+strconv.Itoa(c.size), func(t *testing.T) {
				if n := testAnnounced(t, redis(t), c.size); n != c.after {
					t.Fatalf("value of %d bytes: %d commands after the wake-up, want %d", c.size, n, c.after)
				}
			})
		}
	}
}

// testAnnounced runs one waiter on a holder's load of a value with a name
// of size bytes and returns the Redis commands the waiter sent after the
// holder stored.
func testAnnounced(t *testing.T, r *testcontainers.RedisNamespace, size int) int64 {
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: time.Minute}
	holder := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
	wc, _, rt := countedCache(t, r)
	wc.recheck = time.Hour // only the notification can wake the waiter
	start := rt.n.Load()   // the Cache's own epoch learning is not the waiter's
	waiter := newEntity[user](t, wc, "hot", p)
	name := string(make([]byte, size))
	g := startHeldLoad(t, holder, waiter, name)
	waitFor(t, 10*time.Second, func() bool { return waiter.Stats().LockWaits == 1 })
	// The GET, the lease, and the re-check once subscribed: wait for that
	// call too, and for the subscription, so that no announcement is missed.
	waitFor(t, 10*time.Second, func() bool { return rt.n.Load()-start >= 3 })
	waitFor(t, 10*time.Second, func() bool { return wc.hub.fanout().LiveNow() })
	before := rt.n.Load()
	if res := g.finish(t); res.err != nil || res.u.Name != name {
		t.Fatalf("waiter: %v, name of %d bytes", res.err, len(res.u.Name))
	}
	return rt.n.Load() - before
}

// A GetMany waiting for ids leased by two holders takes both values from
// their announcements: the first holder's store leaves it waiting for the
// second, and once both stored it sends no Redis command at all.
func TestGetMany_announcedValues(t *testing.T) {
	t.Parallel()
	for name, redis := range map[string]func(testing.TB) *testcontainers.RedisNamespace{
		"standalone": testcontainers.Redis, "cluster": testcontainers.RedisCluster,
	} {
		t.Run(name, func(t *testing.T) {
			r := redis(t)
			p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: time.Minute}
			wc, _, rt := countedCache(t, r)
			wc.recheck = time.Hour // only the announcements can wake the waiter
			start := rt.n.Load()   // the Cache's own epoch learning is not the waiter's
			waiter := newEntity[user](t, wc, "hot", p)
			ctx := context.Background()
			release := map[string]func() error{}
			for _, id := range []string{"1", "2"} {
				e := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "hot", p)
				release[id] = holdLoad(e, id, "v"+id)
			}
			type result struct {
				got map[string]user
				err error
			}
			res := make(chan result, 1)
			go func() {
				got, err := waiter.GetMany(ctx, []string{"1", "2"}, func(context.Context, []string) (map[string]user, error) {
					t.Error("the waiter loaded")
					return nil, nil
				})
				res <- result{got, err}
			}()
			// The MGET, the leases, the re-check once subscribed; and the
			// subscription confirmed, so that no announcement is missed.
			waitFor(t, 10*time.Second, func() bool { return waiter.Stats().LockWaits == 2 && rt.n.Load()-start >= 3 })
			waitFor(t, 10*time.Second, func() bool { return wc.hub.fanout().LiveNow() })
			before := rt.n.Load()
			for _, id := range []string{"1", "2"} {
				if err := release[id](); err != nil {
					t.Fatal(err)
				}
			}
			out := <-res
			if out.err != nil || out.got["1"].Name != "v1" || out.got["2"].Name != "v2" {
				t.Fatalf("waiter: %+v, %v", out.got, out.err)
			}
			if n := rt.n.Load() - before; n != 0 {
				t.Fatalf("%d commands after the holders began to store, want 0", n)
			}
		})
	}
}
