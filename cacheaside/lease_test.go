package cacheaside

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// A load that read old data before an Invalidate cannot store it after.
func TestLease_invalidateDefeatsEarlierLoad(t *testing.T) {
	t.Parallel()
	for _, s := range []Strategy{None, SingleFlight, Mutex} {
		t.Run(s.String(), func(t *testing.T) {
			r := testcontainers.Redis(t)
			e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{Strategy: s})
			ctx := context.Background()
			read, gate := make(chan struct{}), make(chan struct{})
			done := make(chan error)
			go func() {
				_, err := e.Get(ctx, "1", func(ctx context.Context, id string) (user, error) {
					u := user{ID: id, Ver: 1} // the old row
					close(read)
					<-gate
					return u, nil
				})
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
			if n := r.Client.Exists(ctx, key).Val(); n != 0 {
				t.Fatal("the stale value was stored after the invalidation")
			}
			if got := e.Stats().RejectedSets; got != 1 {
				t.Fatalf("rejected sets = %d, want 1", got)
			}
		})
	}
}

// An expired or evicted version key cannot let a stale set through: the
// store is refused when the token read before the load is gone.
func TestLease_lostVersionRefusesStore(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	e := newEntity[user](t, newCache(t, r.Client, r.Namespace, nil), "user", Policy{})
	ctx := context.Background()
	key, _ := e.Key("1")
	_, err := e.Get(ctx, "1", func(ctx context.Context, id string) (user, error) {
		r.Client.Del(ctx, key+":ver") // the version key expires (or is evicted) mid-load
		return user{ID: id}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Client.Exists(ctx, key).Val() != 0 || e.Stats().RejectedSets != 1 {
		t.Fatalf("store not refused after the version key vanished (rejected %d)", e.Stats().RejectedSets)
	}
}

// Randomized interleaving of slow loads and writes (DB first, then
// Invalidate) across goroutines and two processes: no read returns a value
// older than the last write completed before the read began, and after the
// run every cached value is the latest.
func TestLease_randomized(t *testing.T) {
	t.Parallel()
	for _, s := range []Strategy{None, SingleFlight, Mutex, AsyncRefresh} {
		t.Run(s.String(), func(t *testing.T) { leaseRandomized(t, testcontainers.Redis(t), s) })
	}
}

func TestLease_randomized_cluster(t *testing.T) {
	t.Parallel()
	for _, s := range []Strategy{SingleFlight, Mutex} {
		t.Run(s.String(), func(t *testing.T) { leaseRandomized(t, testcontainers.RedisCluster(t), s) })
	}
}

func leaseRandomized(t *testing.T, r *testcontainers.RedisNamespace, s Strategy) {
	const ids, writers, readers, writes = 8, 4, 16, 40
	p := Policy{TTL: time.Minute, Strategy: s, LockTTL: time.Second, WaitTimeout: 10 * time.Second, Grace: -1}
	if s == AsyncRefresh {
		p.TTL, p.Grace = 30*time.Millisecond, time.Minute // stale reads are allowed; checked below
	}
	ents := []*Entity[user]{
		newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p),
		newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p),
	}
	var dbMu sync.Mutex
	db := make([]int, ids)        // current version of each row
	completed := make([]int, ids) // last version whose Invalidate returned
	load := func(ctx context.Context, id string) (user, error) {
		i, _ := strconv.Atoi(id)
		dbMu.Lock()
		v := db[i]
		dbMu.Unlock()
		time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond) // slow load after the read
		return user{ID: id, Ver: v}, nil
	}
	ctx := context.Background()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var stale, reads atomic.Int64
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < writes; n++ {
				i := rand.IntN(ids)
				dbMu.Lock()
				db[i]++
				v := db[i]
				dbMu.Unlock()
				if err := ents[rand.IntN(2)].Invalidate(ctx, strconv.Itoa(i)); err != nil {
					t.Error(err)
				}
				dbMu.Lock()
				completed[i] = max(completed[i], v)
				dbMu.Unlock()
				time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			}
		}()
	}
	var rwg sync.WaitGroup
	for g := 0; g < readers; g++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for !stop.Load() {
				i := rand.IntN(ids)
				dbMu.Lock()
				floor := completed[i]
				dbMu.Unlock()
				u, err := ents[rand.IntN(2)].Get(ctx, strconv.Itoa(i), load)
				if err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				if u.Ver < floor && s != AsyncRefresh {
					stale.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	stop.Store(true)
	rwg.Wait()
	if n := stale.Load(); n != 0 {
		t.Fatalf("%d of %d reads returned a value older than a write completed before them", n, reads.Load())
	}
	// Let background refreshes (AsyncRefresh) finish, then check what
	// survived in Redis.
	for _, e := range ents {
		_ = e.c.Close()
	}
	var rejected uint64
	for i := 0; i < ids; i++ {
		key, _ := ents[0].Key(strconv.Itoa(i))
		b, err := r.Client.Get(ctx, key).Bytes()
		if err != nil {
			continue // not cached: fine
		}
		_, payload, err := decodeEntry(b)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		var u user
		if err := (JSON{}).Unmarshal(payload, &u); err != nil {
			t.Fatal(err)
		}
		if u.Ver != db[i] {
			t.Fatalf("%s holds version %d, the DB has %d: a stale set survived", key, u.Ver, db[i])
		}
	}
	for _, e := range ents {
		rejected += e.Stats().RejectedSets
	}
	t.Logf("%d reads, %d rejected sets", reads.Load(), rejected)
	if rejected == 0 {
		t.Fatal("no set was rejected: the interleaving did not exercise the leases")
	}
}
