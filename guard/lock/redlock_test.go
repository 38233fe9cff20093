package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// redlockNodes starts n independent redis-server nodes and returns them with
// one client of each. Clients do not retry, so a stopped node fails fast.
func redlockNodes(t *testing.T, n int) ([]*testcontainers.RedisServer, []redis.UniversalClient) {
	t.Helper()
	servers := make([]*testcontainers.RedisServer, n)
	clients := make([]redis.UniversalClient, n)
	for i := range n {
		servers[i] = testcontainers.NewRedisServer(t)
		c := redis.NewClient(&redis.Options{Addr: servers[i].Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	return servers, clients
}

// moreClients returns new clients of the same nodes, as another process
// would have.
func moreClients(t *testing.T, servers []*testcontainers.RedisServer) []redis.UniversalClient {
	t.Helper()
	clients := make([]redis.UniversalClient, len(servers))
	for i, s := range servers {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialerRetries: 1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	return clients
}

func TestRedlock_nodesStopped(t *testing.T) {
	servers, clients := redlockNodes(t, 3)
	rl := mustRedlock(t, clients, nil)
	other := mustRedlock(t, moreClients(t, servers), nil)
	ctx := context.Background()

	// All nodes up.
	lk, err := rl.Obtain(ctx, "r", 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryObtain(ctx, "r", 10*time.Second); !errors.Is(err, lock.ErrNotObtained) || errors.Is(err, lock.ErrNoQuorum) {
		t.Fatalf("TryObtain of a held lock = %v, want ErrNotObtained (not a quorum failure)", err)
	}

	// One node stopped mid-test, while the lock is held: it stays held and
	// exclusive, and it is granted again after its release.
	servers[0].Stop()
	if d, err := lk.TTL(ctx); err != nil || d <= 0 {
		t.Fatalf("TTL with one node down = %v, %v", d, err)
	}
	if err := lk.Refresh(ctx, 10*time.Second); err != nil {
		t.Fatalf("Refresh with one node down: %v", err)
	}
	if _, err := other.TryObtain(ctx, "r", 10*time.Second); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("TryObtain of a held lock with one node down = %v", err)
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatalf("Release with one node down: %v", err)
	}
	for i := range 5 {
		lk2, err := other.Obtain(ctx, "r", 10*time.Second, nil)
		if err != nil {
			t.Fatalf("Obtain %d with one node down: %v", i, err)
		}
		if lk2.Fence() <= lk.Fence() {
			t.Errorf("fence %d is not above %d", lk2.Fence(), lk.Fence())
		}
		lk = lk2
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Two nodes stopped: no quorum, and Obtain says so at once.
	servers[1].Stop()
	_, err = rl.Obtain(ctx, "r", 10*time.Second, nil)
	if !errors.Is(err, lock.ErrNoQuorum) || !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("Obtain with two of three nodes down = %v, want ErrNoQuorum", err)
	}
	msg := err.Error()
	for _, want := range []string{"quorum", "1 of 3 nodes", "2 needed", "node 0", "node 1", "refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if _, err := rl.TryObtain(ctx, "r2", 10*time.Second); !errors.Is(err, lock.ErrNoQuorum) {
		t.Errorf("TryObtain with two nodes down = %v, want ErrNoQuorum", err)
	}
	if s := rl.Stats(); s.Errors != 2 {
		t.Errorf("Stats.Errors = %d, want 2", s.Errors)
	}

	// The nodes come back (empty: they keep no data); locks are granted
	// again.
	for _, s := range servers[:2] {
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a quorum again", func() bool {
		lk, err := rl.TryObtain(ctx, "r3", 10*time.Second)
		if err != nil {
			return false
		}
		return lk.Release(ctx) == nil
	})
}

func TestRedlock_mutualExclusion(t *testing.T) {
	servers, clients := redlockNodes(t, 3)
	rls := []*lock.Redlock{mustRedlock(t, clients, nil), mustRedlock(t, moreClients(t, servers), nil)}
	ctx := context.Background()
	runCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()

	var inside, overlaps, lastFence, badFences, acquired atomic.Int64
	var wg sync.WaitGroup
	for _, rl := range rls {
		for range 4 {
			wg.Go(func() {
				for {
					lk, err := rl.Obtain(runCtx, "hot", 10*time.Second, &lock.ObtainOptions{WaitTimeout: -1})
					if err != nil {
						if !errors.Is(err, lock.ErrNotObtained) || runCtx.Err() == nil {
							t.Errorf("Obtain: %v", err)
						}
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					if prev := lastFence.Swap(lk.Fence()); lk.Fence() <= prev {
						badFences.Add(1)
					}
					acquired.Add(1)
					inside.Add(-1)
					if err := lk.Release(ctx); err != nil {
						t.Errorf("Release: %v", err)
					}
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d acquisitions; stats %+v %+v", acquired.Load(), rls[0].Stats(), rls[1].Stats())
	if overlaps.Load() != 0 || badFences.Load() != 0 {
		t.Errorf("%d overlaps, %d fences that did not increase", overlaps.Load(), badFences.Load())
	}
	// Contenders can split the votes (no quorum for anyone, all back off),
	// so the count is low; but some round must have won.
	if acquired.Load() == 0 {
		t.Errorf("only %d acquisitions", acquired.Load())
	}
}

func TestRedlock_fenceFollowsQuorum(t *testing.T) {
	servers, clients := redlockNodes(t, 3)
	rl := mustRedlock(t, clients, nil)
	ctx := context.Background()

	// Node 0's counter is far ahead of the others (it saw acquisitions
	// they missed).
	if err := clients[0].Set(ctx, lockKey("ak", "r")+":fence", 100, 0).Err(); err != nil {
		t.Fatal(err)
	}
	lk := mustObtain(t, rl, "r", 10*time.Second)
	if lk.Fence() != 101 {
		t.Fatalf("fence = %d, want 101 (the largest of the quorum)", lk.Fence())
	}
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Without node 0, the other two still number above 101: the quorum's
	// counters were raised.
	servers[0].Stop()
	next := mustObtain(t, rl, "r", 10*time.Second)
	if next.Fence() <= 101 {
		t.Fatalf("fence without node 0 = %d, want above 101", next.Fence())
	}
	_ = next.Release(ctx)
}

func TestRedlock_Release_notHeld(t *testing.T) {
	_, clients := redlockNodes(t, 3)
	// A generous node timeout: a loaded test machine may be slow to dial.
	rl := mustRedlock(t, clients, &lock.RedlockOptions{Namespace: "rl", NodeTimeout: time.Second})
	ctx := context.Background()

	old := mustObtain(t, rl, "r", 1500*time.Millisecond)
	waitFor(t, "expiry", func() bool {
		_, err := old.TTL(ctx)
		return isNotHeld(err)
	})
	// TTL counts the drift off; the nodes' keys outlive it a little.
	cur, err := rl.Obtain(ctx, "r", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Release(ctx); !isNotHeld(err) {
		t.Fatalf("Release after expiry = %v, want ErrLockNotHeld", err)
	}
	if err := old.Refresh(ctx, time.Minute); !isNotHeld(err) {
		t.Fatalf("Refresh after expiry = %v, want ErrLockNotHeld", err)
	}
	// The new holder's quorum is intact (a node where the old key had not
	// yet expired may have refused the new holder, and then holds nothing
	// or the old token's leftover).
	holding := 0
	for _, c := range clients {
		if c.Get(ctx, lockKey("rl", "r")).Val() == cur.Token() {
			holding++
		}
	}
	if holding < 2 {
		t.Errorf("%d nodes hold the new holder's token after the old holder's Release, want at least 2", holding)
	}
	if err := cur.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedlock_badInput(t *testing.T) {
	ctx := context.Background()
	_, clients := redlockNodes(t, 1)
	rl := mustRedlock(t, clients, nil)
	if _, err := rl.Obtain(ctx, "", time.Second, nil); err == nil {
		t.Error("empty name accepted")
	}
	if _, err := rl.Obtain(ctx, "r", 0, nil); err == nil {
		t.Error("zero ttl accepted")
	}
	// A single node is a quorum of one.
	lk := mustObtain(t, rl, "r", time.Second)
	if err := lk.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRedlock_AutoRefresh_oneNodeDown(t *testing.T) {
	servers, clients := redlockNodes(t, 3)
	rl := mustRedlock(t, clients, &lock.RedlockOptions{NodeTimeout: 200 * time.Millisecond})
	ctx := context.Background()

	// Refreshed every ttl/3: a refresh may stall for 1.3 s before the lock
	// lapses.
	const ttl = 2 * time.Second
	lk := mustObtain(t, rl, "r", ttl)
	work, stop := lk.AutoRefresh(ctx)
	defer stop()
	servers[2].Stop()
	time.Sleep(2 * ttl) // time must pass: the lock outlives its ttl
	if err := work.Err(); err != nil {
		t.Fatalf("watchdog context ended with one node down: %v", context.Cause(work))
	}
	if d, err := lk.TTL(ctx); err != nil || d <= 0 {
		t.Fatalf("TTL after 2 ttls = %v, %v", d, err)
	}
	// Two nodes down: refreshes cannot reach a quorum, and the watchdog
	// reports the lock lost once its ttl has run out.
	servers[1].Stop()
	select {
	case <-work.Done():
	case <-time.After(time.Minute):
		t.Fatal("watchdog still running without a quorum")
	}
	if cause := context.Cause(work); !isNotHeld(cause) {
		t.Fatalf("cause = %v, want ErrLockNotHeld", cause)
	}
}
