package cacheaside

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// stallAfterLease is a go-redis hook that holds up the first lease.lua
// call (or pipeline of them) of its client once Redis has run it: the
// caller holds the leases and stalls, as if starved of CPU, until release
// is closed. stalled is closed when it stalls.
type stallAfterLease struct {
	used    atomic.Bool
	stalled chan struct{}
	release chan struct{}
}

func newStallAfterLease() *stallAfterLease {
	return &stallAfterLease{stalled: make(chan struct{}), release: make(chan struct{})}
}

// isLeaseCall reports whether cmd ran lease.lua (by EVALSHA or EVAL).
func isLeaseCall(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		return args[1] == leaseScript.Hash()
	case "eval":
		return args[1] == leaseLua
	}
	return false
}

func (s *stallAfterLease) stall(cmds ...redis.Cmder) {
	if !isLeaseCall(cmds[0]) || cmds[0].Err() != nil || !s.used.CompareAndSwap(false, true) {
		return
	}
	close(s.stalled)
	<-s.release
}

func (s *stallAfterLease) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *stallAfterLease) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// go-redis sets cmd's error only once the hooks have returned: a
		// NOSCRIPT answer (no lease taken, EVAL follows) shows here in err.
		err := next(ctx, cmd)
		if err == nil {
			s.stall(cmd)
		}
		return err
	}
}
func (s *stallAfterLease) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		s.stall(cmds...)
		return err
	}
}

// lostLeases counts, by id, the leases of e's ids that any entity counts
// lost (EventLeaseLost) while the test runs.
func lostLeases(t *testing.T, e *Entity[user], ids []string) (byID func() map[string]int) {
	t.Helper()
	idOf := make(map[string]string, len(ids))
	for _, id := range ids {
		key, err := e.Key(id)
		if err != nil {
			t.Fatal(err)
		}
		idOf[key] = id
	}
	var mu sync.Mutex
	lost := map[string]int{}
	h := func(key string) {
		if id, ok := idOf[key]; ok {
			mu.Lock()
			lost[id]++
			mu.Unlock()
		}
	}
	leaseLostHook.Store(&h)
	t.Cleanup(func() { leaseLostHook.Store(nil) })
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]int, len(lost))
		for id, n := range lost {
			out[id] = n
		}
		return out
	}
}

// checkLoadsExplained fails unless every id of ids was loaded at least want
// times, and at most want plus the number of its leases counted lost: every
// extra load is explained by a lease lost.
func (b *batchLoader) checkLoadsExplained(t *testing.T, ids []string, want int, lost map[string]int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if n := b.loads[id]; n < want || n > want+lost[id] {
			t.Errorf("id %s loaded %d times, want %d plus at most its %d lost leases", id, n, want, lost[id])
		}
	}
}

// lapseTestPolicy has leases short enough that a test can wait for one to
// lapse.
var lapseTestPolicy = Policy{Strategy: Mutex, LockTTL: 300 * time.Millisecond, WaitTimeout: time.Minute}

// lapseScene is two processes of entity "user": a, whose first lease
// call stalls once Redis has answered it (see stallAfterLease), and b.
type lapseScene struct {
	r     *testcontainers.RedisNamespace
	stall *stallAfterLease
	a, b  *Entity[user]
}

// newLapseScene returns a lapseScene whose entities have Policy p.
func newLapseScene(t *testing.T, p Policy) *lapseScene {
	r := testcontainers.Redis(t)
	s := &lapseScene{r: r, stall: newStallAfterLease()}
	aClient := r.NewClient(t)
	aClient.AddHook(s.stall)
	s.a = newEntity[user](t, newCache(t, aClient, r.Namespace, nil), "user", p)
	s.b = newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	return s
}

// run starts first, which takes the leases of ids on a and stalls; once
// they have lapsed, it runs then (on b), lets a go on and waits for first
// to return.
func (s *lapseScene) run(t *testing.T, ids []string, first, then func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		first()
	}()
	<-s.stall.stalled
	locks := make([]string, len(ids))
	for i, id := range ids {
		key, _ := s.a.Key(id)
		locks[i] = key + ":lock"
	}
	waitFor(t, 30*time.Second, func() bool { return s.r.Client.Exists(context.Background(), locks...).Val() == 0 })
	then()
	close(s.stall.release)
	<-done
}

// A GetMany caller that stalls between taking its leases and loading,
// until they lapse and another caller took one and loaded it, does not
// load that id again: it finds the lease lost (counted), and serves the
// other caller's value; the lapsed lease nobody took it takes again.
func TestGetMany_leaseLapsedBeforeLoad(t *testing.T) {
	s := newLapseScene(t, lapseTestPolicy)
	ctx := context.Background()
	ids := []string{"1", "2"}
	lost := lostLeases(t, s.a, ids)
	bl := &batchLoader{}
	var got map[string]user
	var err error
	s.run(t, ids, func() { got, err = s.a.GetMany(ctx, ids, bl.load) }, func() {
		if got, err := s.b.GetMany(ctx, []string{"1"}, bl.load); err != nil || got["1"].ID != "1" {
			t.Errorf("second caller's GetMany = %v, %v", got, err)
		}
	})
	if err != nil || len(got) != 2 || got["1"].ID != "1" || got["2"].ID != "2" {
		t.Fatalf("stalled caller's GetMany = %v, %v", got, err)
	}
	bl.checkLoads(t, ids, 1)
	if st := s.a.Stats(); st.LeasesLost != 2 || st.Loads != 1 {
		t.Fatalf("stalled caller's stats = %+v; want both leases lost and one load (id 2, taken back)", st)
	}
	if l := lost(); l["1"] != 1 || l["2"] != 1 {
		t.Fatalf("lost leases by id = %v", l)
	}
}

// The same for Get: the stalled caller serves the value the other caller
// loaded after its lease lapsed.
func TestGet_leaseLapsedBeforeLoad(t *testing.T) {
	s := newLapseScene(t, lapseTestPolicy)
	ctx := context.Background()
	var loads counter
	var v user
	var err error
	s.run(t, []string{"1"}, func() { v, err = s.a.Get(ctx, "1", loads.load) }, func() {
		if v, err := s.b.Get(ctx, "1", loads.load); err != nil || v.ID != "1" {
			t.Errorf("second caller's Get = %v, %v", v, err)
		}
	})
	if err != nil || v.ID != "1" {
		t.Fatalf("stalled caller's Get = %v, %v", v, err)
	}
	if n := loads.calls.Load(); n != 1 {
		t.Fatalf("id 1 loaded %d times, want 1", n)
	}
	if st := s.a.Stats(); st.LeasesLost != 1 || st.Loads != 0 {
		t.Fatalf("stalled caller's stats = %+v; want its lease lost and no load", st)
	}
}

// A lease lost while its holder loads (here deleted by the loader, as if
// it lapsed, and taken by another caller that loads too) is counted when
// the holder stores: each extra load is explained by a lost lease.
func TestLeaseLostDuringLoad(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: time.Minute}
	a := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	b := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	ids := []string{"1", "2"}
	lost := lostLeases(t, a, ids)
	bl := &batchLoader{}
	// lapse deletes the leases of ids and has b load them meanwhile.
	lapse := func(ids ...string) {
		for _, id := range ids {
			key, _ := a.Key(id)
			if err := r.Client.Del(ctx, key+":lock").Err(); err != nil {
				t.Error(err)
			}
		}
		if _, err := b.GetMany(ctx, ids, bl.load); err != nil {
			t.Error(err)
		}
	}

	t.Run("Get", func(t *testing.T) {
		v, err := a.Get(ctx, "1", func(ctx context.Context, id string) (user, error) {
			lapse(id)
			m, err := bl.load(ctx, []string{id})
			return m[id], err
		})
		if err != nil || v.ID != "1" {
			t.Fatalf("Get = %v, %v", v, err)
		}
	})
	t.Run("GetMany", func(t *testing.T) {
		got, err := a.GetMany(ctx, []string{"2"}, func(ctx context.Context, ids []string) (map[string]user, error) {
			lapse(ids...)
			return bl.load(ctx, ids)
		})
		if err != nil || got["2"].ID != "2" {
			t.Fatalf("GetMany = %v, %v", got, err)
		}
	})
	l := lost()
	bl.checkLoads(t, ids, 2)
	bl.checkLoadsExplained(t, ids, 1, l)
	if s := a.Stats(); s.LeasesLost != 2 || l["1"] != 1 || l["2"] != 1 {
		t.Fatalf("stats = %+v, lost by id = %v; want one lost lease per id", s, l)
	}
}

// goexitLoader calls runtime.Goexit, as t.FailNow does.
func goexitLoader(context.Context, string) (user, error) {
	runtime.Goexit()
	return user{}, nil
}

// checkLeaseFreed fails if id's lease is still held, then checks that
// another process loads id at once, without waiting.
func checkLeaseFreed(t *testing.T, r *testcontainers.RedisNamespace, e *Entity[user], id string) {
	t.Helper()
	key, _ := e.Key(id)
	if n := r.Client.Exists(context.Background(), key+":lock").Val(); n != 0 {
		t.Fatalf("the lease of %s is still held after its loader called runtime.Goexit", id)
	}
	other := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", e.p)
	var loads counter
	if v, err := other.Get(context.Background(), id, loads.load); err != nil || v.ID != id {
		t.Fatalf("Get after the Goexit = %v, %v", v, err)
	}
	if s := other.Stats(); s.Loads != 1 || s.LockWaits != 0 {
		t.Fatalf("stats of the next caller = %+v; want one load and no wait", s)
	}
}

// A Get whose loader calls runtime.Goexit gives its lease up: the next
// caller does not wait for LockTTL.
func TestGet_loaderGoexitReleasesLease(t *testing.T) {
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: time.Minute}
	e := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	if _, err := e.Get(context.Background(), "1", goexitLoader); !errors.Is(err, ErrLoaderGoexit) {
		t.Fatalf("err = %v, want ErrLoaderGoexit", err)
	}
	checkLeaseFreed(t, r, e, "1")
}

// The same for GetMany, whose loader runs on the caller's goroutine.
func TestGetMany_loaderGoexitReleasesLeases(t *testing.T) {
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: time.Minute}
	e := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = e.GetMany(context.Background(), []string{"1", "2"}, func(context.Context, []string) (map[string]user, error) {
			runtime.Goexit()
			return nil, nil
		})
		t.Error("GetMany returned after its loader called runtime.Goexit")
	}()
	<-ended
	checkLeaseFreed(t, r, e, "1")
	checkLeaseFreed(t, r, e, "2")
}
