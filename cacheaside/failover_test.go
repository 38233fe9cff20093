package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// failoverRig is a Cache with one entity over a private 3-master +
// 3-replica Cluster, and a row whose version the test changes.
type failoverRig struct {
	rc      *testcontainers.ReplicatedCluster
	client  *redis.ClusterClient
	c       *Cache
	e       *Entity[user]
	version atomic.Int64 // the database's row
}

func newFailoverRig(t *testing.T, acks int) *failoverRig {
	t.Helper()
	r := &failoverRig{rc: testcontainers.NewReplicatedCluster(t)}
	r.client = r.rc.NewClient(t)
	// No breaker: a read must reach Redis whenever Redis answers, so that
	// a stale entry there is seen.
	r.c = newCache(t, r.client, "fo", &Options{ReplicaAcks: acks, BreakerThreshold: -1})
	r.e = newEntity[user](t, r.c, "user", Policy{TTL: time.Hour})
	r.version.Store(1)
	return r
}

func (r *failoverRig) load(_ context.Context, id string) (user, error) {
	return user{ID: id, Ver: int(r.version.Load())}, nil
}

// get reads id and fails the test on an error.
func (r *failoverRig) get(t *testing.T, ctx context.Context, id string) user {
	t.Helper()
	u, err := r.e.Get(ctx, id, r.load)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return u
}

// cached reads id once (caching it), then waits until the replica of its
// master has every write the master has: the entry is on both.
func (r *failoverRig) cached(t *testing.T, ctx context.Context, id string) (key string, master, replica *testcontainers.RedisServer) {
	t.Helper()
	if u := r.get(t, ctx, id); u.Ver != int(r.version.Load()) {
		t.Fatalf("first Get(%s) = %+v", id, u)
	}
	key, err := r.e.key(id)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := r.client.Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("entry %s not in Redis: %d, %v", key, n, err)
	}
	master, err = r.rc.MasterOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	replica, err = r.rc.ReplicaOf(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.rc.WaitInSync(ctx, master, replica); err != nil {
		t.Fatal(err)
	}
	return key, master, replica
}

// routed waits until the cache's client reaches the master of key again
// (a GET answers, with a value or nil) after a failover.
func (r *failoverRig) routed(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	start := time.Now()
	if err := testcontainers.WaitRouted(ctx, r.client, key); err != nil {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t.Fatalf("waited %v for the client to route %s to a live master: %v; the nodes' views:\n%s",
			time.Since(start).Round(time.Millisecond), key, err, r.rc.Views(dctx))
	}
}

// waitPending waits until the Cache has n invalidations pending.
func (r *failoverRig) waitPending(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	waitUntil(t, ctx, fmt.Sprintf("%d pending invalidations", n), func() error {
		if got := r.c.PendingInvalidations(); got != n {
			return fmt.Errorf("%d pending", got)
		}
		return nil
	})
}

// An invalidation the master acknowledged but its replica never received
// is lost when that replica is promoted: the old entry comes back with a
// valid version token and is served. The replica is made to miss it
// without a race: paused (SIGSTOP), its replication link killed on the
// master (so the master has no replica to send to and the paused replica
// cannot reconnect), the invalidation made, the master killed (SIGKILL),
// the replica resumed and promoted (CLUSTER FAILOVER TAKEOVER).
//
// With ReplicaAcks 1 the master's WAIT counts no replica, so the
// invalidation stays pending: reads skip Redis (version 2), before and
// after the failover, and it completes once the promoted master has a
// replica again. With ReplicaAcks 0 the same steps serve version 1: the
// check fails without the rule.
func TestFailover_lostInvalidation(t *testing.T) {
	t.Parallel()
	for _, acks := range []int{1, 0} {
		t.Run("ReplicaAcks="+strconv.Itoa(acks), func(t *testing.T) { testLostInvalidation(t, acks) })
	}
}

func testLostInvalidation(t *testing.T, acks int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newFailoverRig(t, acks)
	key, master, replica := r.cached(t, ctx, "1")

	// The replica stops hearing its master.
	if err := r.rc.CutReplica(ctx, master, replica); err != nil {
		t.Fatal(err)
	}

	// The write: the database, then the invalidation, which the master
	// acknowledges.
	r.version.Store(2)
	err := r.e.Invalidate(ctx, "1")
	switch {
	case acks > 0 && !errors.Is(err, ErrInvalidationPending):
		t.Fatalf("Invalidate with no replica to confirm it = %v, want ErrInvalidationPending", err)
	case acks == 0 && err != nil:
		t.Fatalf("Invalidate = %v", err)
	}
	if s := r.e.Stats(); acks > 0 && (s.ReplicaAckShortfalls < 1 || s.InvalidationsDeferred != 1) {
		t.Fatalf("stats after a shortfall = %+v", s)
	}
	if u := r.get(t, ctx, "1"); u.Ver != 2 {
		t.Fatalf("Get before the failover = %+v, want version 2", u)
	}

	// The failover.
	master.Kill()
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := r.rc.Takeover(ctx, replica); err != nil {
		t.Fatal(err)
	}
	r.routed(t, ctx, key)

	u := r.get(t, ctx, "1")
	switch {
	case acks > 0 && u.Ver != 2:
		t.Fatalf("after the failover: Get = %+v, want version 2 (an acknowledged write)", u)
	case acks == 0:
		if u.Ver != 1 {
			t.Fatalf("without ReplicaAcks the promoted replica should have served the old entry (version 1), got %+v", u)
		}
		return
	}

	// The promoted master has no replica: the invalidation stays pending
	// until the old master's server rejoins as its replica.
	if n := r.c.PendingInvalidations(); n != 1 {
		t.Fatalf("pending after the failover = %d, want 1", n)
	}
	if err := master.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.rc.AddReplica(ctx, master, replica); err != nil {
		t.Fatal(err)
	}
	r.waitPending(t, ctx, 0)
	// The Cache saw the master fail: it stores nothing until its settle
	// window (Options.SettleWindow) has passed.
	waitFor(t, time.Minute, func() bool { return !r.c.Settling() })
	if u := r.get(t, ctx, "1"); u.Ver != 2 {
		t.Fatalf("after the retry: Get = %+v, want version 2", u)
	}
	if u := r.get(t, ctx, "1"); u.Ver != 2 || r.e.Stats().Hits != 1 {
		t.Fatalf("the id is cached again: Get = %+v, stats %+v", u, r.e.Stats())
	}
}

// A replica that never acknowledges (paused, then killed) makes every
// invalidation and Set of its master's ids pending and counted; reads of
// those ids skip Redis meanwhile; they complete once the replica answers
// again (resumed), or once a new replica has synced (after a kill).
func TestFailover_replicaNeverAcks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := newFailoverRig(t, 1)

	_, master, replica := r.cached(t, ctx, "1")
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	r.version.Store(2)
	if err := r.e.Invalidate(ctx, "1"); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Invalidate with the replica paused = %v, want ErrInvalidationPending", err)
	}
	if err := r.e.Set(ctx, "1", user{ID: "1", Ver: 2}); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Set with the replica paused = %v, want ErrInvalidationPending", err)
	}
	if s := r.e.Stats(); s.ReplicaAckShortfalls < 2 || s.InvalidationsDeferred != 2 || s.CacheErrors != 0 {
		t.Fatalf("stats with the replica paused = %+v", s)
	}
	if n := r.c.PendingInvalidations(); n != 1 {
		t.Fatalf("pending = %d, want 1", n)
	}
	if u := r.get(t, ctx, "1"); u.Ver != 2 {
		t.Fatalf("Get with the invalidation pending = %+v, want version 2", u)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	r.waitPending(t, ctx, 0)
	if u := r.get(t, ctx, "1"); u.Ver != 2 {
		t.Fatalf("after the replica resumed: Get = %+v, want version 2", u)
	}

	// Killed: the master loses its replica for good; a new one (the same
	// server started empty) takes its place.
	r.version.Store(3)
	replica.Kill()
	shortBefore := r.e.Stats().ReplicaAckShortfalls
	if err := r.e.Invalidate(ctx, "1"); !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Invalidate with the replica killed = %v, want ErrInvalidationPending", err)
	}
	if s := r.e.Stats(); s.ReplicaAckShortfalls <= shortBefore || s.InvalidationsDeferred != 3 {
		t.Fatalf("stats with the replica killed = %+v", s)
	}
	if u := r.get(t, ctx, "1"); u.Ver != 3 {
		t.Fatalf("Get with the replica killed = %+v, want version 3", u)
	}
	if err := replica.Start(); err != nil {
		t.Fatal(err)
	}
	if err := r.rc.AddReplica(ctx, replica, master); err != nil {
		t.Fatal(err)
	}
	r.waitPending(t, ctx, 0)
	if u := r.get(t, ctx, "1"); u.Ver != 3 {
		t.Fatalf("after a new replica synced: Get = %+v, want version 3", u)
	}
}

// waitUntil polls check every 10 ms until it returns nil; the test fails
// when ctx ends first.
func waitUntil(t *testing.T, ctx context.Context, what string, check func() error) {
	t.Helper()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last: %v)", what, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// BenchmarkFailover_invalidate measures Invalidate on a private 3-master +
// 3-replica Cluster, without and with ReplicaAcks 1: one id per call, and
// ten ids per call (spread over the three masters, so that WAIT runs on
// each of them, concurrently).
func BenchmarkFailover_invalidate(b *testing.B) {
	rc := testcontainers.NewReplicatedCluster(b)
	ctx := context.Background()
	for _, acks := range []int{0, 1} {
		for _, batch := range []int{1, 10} {
			b.Run(fmt.Sprintf("ReplicaAcks=%d/ids=%d", acks, batch), func(b *testing.B) {
				client := rc.NewClient(b)
				c := newCache(b, client, fmt.Sprintf("bench%d-%d", acks, batch), &Options{ReplicaAcks: acks})
				e := newEntity[user](b, c, "user", Policy{TTL: time.Hour})
				ids := make([]string, 1000)
				for i := range ids {
					ids[i] = strconv.Itoa(i)
				}
				if err := e.Invalidate(ctx, ids...); err != nil { // scripts loaded, connections open
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					lo := (i * batch) % (len(ids) - batch)
					if err := e.Invalidate(ctx, ids[lo:lo+batch]...); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				if s := e.Stats(); s.ReplicaAckShortfalls != 0 || s.InvalidationsDeferred != 0 {
					b.Fatalf("stats = %+v", s)
				}
			})
		}
	}
}

func TestNew_replicaAcksOptions(t *testing.T) {
	t.Parallel()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: time.Second})
	defer client.Close()
	for _, o := range []Options{
		{ReplicaAcks: -1},
		{ReplicaAcks: 1, ReplicaAckTimeout: -time.Millisecond},
		{ReplicaAcks: 1, ReplicaAckTimeout: time.Second}, // not below ReadTimeout
	} {
		if _, err := New(client, &o); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", o, err)
		}
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := New(ring, &Options{ReplicaAcks: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("New(ring, ReplicaAcks 1) = %v, want ErrInvalid", err)
	}
	c, err := New(ring, &Options{ReplicaAckTimeout: time.Hour}) // ignored when off
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	c, err = New(client, &Options{ReplicaAcks: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.acks != (acks{n: 2, ms: DefaultReplicaAckTimeout.Milliseconds()}) {
		t.Errorf("acks = %+v, want 2 replicas within the default timeout", c.acks)
	}
}

// A randomized history across a failover: reads, Invalidates and Sets of
// 30 ids (on every master) in a random order, before and while one master's
// replica is cut off, then that master killed and its replica promoted.
// Every read must return the row's latest version (one process: each
// write completed before the next read began). With ReplicaAcks 0 the
// reads after the failover find stale rows: the check fails without the
// rule.
func TestFailover_history(t *testing.T) {
	t.Parallel()
	for _, acks := range []int{1, 0} {
		t.Run("ReplicaAcks="+strconv.Itoa(acks), func(t *testing.T) { testFailoverHistory(t, acks) })
	}
}

func testFailoverHistory(t *testing.T, acks int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	seed := began.UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))

	h := &foHistory{rig: newFailoverRig(t, acks), db: map[string]int{}}
	t.Logf("%v: cluster up", time.Since(began).Round(time.Millisecond))
	for i := 0; i < 30; i++ {
		h.ids = append(h.ids, strconv.Itoa(i))
		h.db[h.ids[i]] = 1
	}
	for _, id := range h.ids { // every id cached
		h.read(t, ctx, id)
	}
	h.steps(t, ctx, rnd, 60)

	// Cut one master's replica off, then more steps, with at least one
	// write of one of that master's ids, whose old entry the replica has.
	for _, id := range h.ids { // every id cached, and replicated below
		h.read(t, ctx, id)
	}
	victim := h.ids[rnd.Intn(len(h.ids))]
	key, err := h.rig.e.key(victim)
	if err != nil {
		t.Fatal(err)
	}
	master, err := h.rig.rc.MasterOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	replica, err := h.rig.rc.ReplicaOf(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.rig.rc.WaitInSync(ctx, master, replica); err != nil {
		t.Fatal(err)
	}
	onMaster := h.on(t, ctx, master)
	if err := h.rig.rc.CutReplica(ctx, master, replica); err != nil {
		t.Fatal(err)
	}
	h.steps(t, ctx, rnd, 60)
	h.write(t, ctx, rnd, onMaster[rnd.Intn(len(onMaster))])

	t.Logf("%v: failover", time.Since(began).Round(time.Millisecond))
	master.Kill()
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := h.rig.rc.Takeover(ctx, replica); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v: took over", time.Since(began).Round(time.Millisecond))
	h.rig.routed(t, ctx, key)

	stale := 0
	for _, id := range h.ids {
		if u := h.get(t, ctx, id); u.Ver < h.db[id] {
			stale++
		}
	}
	switch {
	case acks > 0 && stale > 0:
		t.Fatalf("after the failover %d of %d ids read stale", stale, len(h.ids))
	case acks == 0:
		if stale == 0 {
			t.Fatal("without ReplicaAcks the failover should have brought stale entries back")
		}
		t.Logf("without ReplicaAcks: %d stale ids after the failover", stale)
		return
	}
	if err := master.Start(); err != nil {
		t.Fatal(err)
	}
	if err := h.rig.rc.AddReplica(ctx, master, replica); err != nil {
		t.Fatal(err)
	}
	h.rig.waitPending(t, ctx, 0)
	h.steps(t, ctx, rnd, 60)
	for _, id := range h.ids {
		h.read(t, ctx, id)
	}
}

// foHistory is a model of the rows (db) and the steps made on them.
type foHistory struct {
	rig *failoverRig
	ids []string
	db  map[string]int // id -> latest version
}

func (h *foHistory) load(_ context.Context, id string) (user, error) {
	return user{ID: id, Ver: h.db[id]}, nil
}

func (h *foHistory) get(t *testing.T, ctx context.Context, id string) user {
	t.Helper()
	u, err := h.rig.e.Get(ctx, id, h.load)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return u
}

// read checks that id reads at its latest version.
func (h *foHistory) read(t *testing.T, ctx context.Context, id string) {
	t.Helper()
	if u := h.get(t, ctx, id); u.Ver != h.db[id] {
		t.Fatalf("Get(%s) = version %d, want %d", id, u.Ver, h.db[id])
	}
}

// write changes id's row, then invalidates it (or Sets it). With
// ReplicaAcks the write may be pending: certainly for an id of a master
// whose replica is cut off, and for any id when a replica on a busy
// machine misses the ack bound; the retrier confirms it later, and the
// reads that follow are checked all the same.
func (h *foHistory) write(t *testing.T, ctx context.Context, rnd *rand.Rand, id string) {
	t.Helper()
	h.db[id]++
	var err error
	if rnd.Intn(2) == 0 {
		err = h.rig.e.Invalidate(ctx, id)
	} else {
		err = h.rig.e.Set(ctx, id, user{ID: id, Ver: h.db[id]})
	}
	if err != nil && !(errors.Is(err, ErrInvalidationPending) && h.rig.c.acks.n > 0) {
		t.Fatalf("write of %s: %v", id, err)
	}
}

// steps makes n random steps: reads (checked) and writes.
func (h *foHistory) steps(t *testing.T, ctx context.Context, rnd *rand.Rand, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		id := h.ids[rnd.Intn(len(h.ids))]
		if rnd.Intn(3) == 0 {
			h.write(t, ctx, rnd, id)
		} else {
			h.read(t, ctx, id)
		}
	}
}

// on returns the ids whose master is node.
func (h *foHistory) on(t *testing.T, ctx context.Context, node *testcontainers.RedisServer) []string {
	t.Helper()
	var ids []string
	for _, id := range h.ids {
		k, _ := h.rig.e.key(id)
		m, err := h.rig.client.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if m.Options().Addr == node.Addr {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		t.Fatalf("no id on %s", node.Addr)
	}
	return ids
}
