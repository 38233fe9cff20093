package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/testcontainers"
)

// batchLoader is a GetMany loader that counts the loads of each id and
// sleeps for delay; ids in absent do not exist.
type batchLoader struct {
	delay  time.Duration
	absent map[string]bool
	onLoad func(ids []string) // called before the sleep, when set

	mu    sync.Mutex
	loads map[string]int // guarded by mu
	calls int            // guarded by mu
}

func (b *batchLoader) load(ctx context.Context, ids []string) (map[string]user, error) {
	b.mu.Lock()
	if b.loads == nil {
		b.loads = make(map[string]int)
	}
	b.calls++
	for _, id := range ids {
		b.loads[id]++
	}
	b.mu.Unlock()
	if b.onLoad != nil {
		b.onLoad(ids)
	}
	select {
	case <-time.After(b.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make(map[string]user, len(ids))
	for _, id := range ids {
		if !b.absent[id] {
			out[id] = user{ID: id, Name: "n-" + id}
		}
	}
	return out, nil
}

// checkLoads fails unless every id of ids was loaded want times.
func (b *batchLoader) checkLoads(t *testing.T, ids []string, want int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, id := range ids {
		if n := b.loads[id]; n != want {
			t.Errorf("id %s loaded %d times, want %d", id, n, want)
		}
	}
}

// The GetMany breakdown scenario: 4 processes × 25 goroutines call GetMany
// on the same 50 cold ids and 5 absent ones.
const (
	sharedProcs      = 4
	sharedGoroutines = 25
	sharedIDs        = 50
)

// The leases have the default LockTTL (3 s, renewed every second). On a
// 2-core machine at load 25, 100 goroutines of the race-instrumented
// binary can starve a holder past its lease; another caller may then take
// the lapsed lease and load the same ids again (the design allows it once
// a lease lapses, as for a holder that died). The tests check that every
// such extra load is explained by a lease counted lost (EventLeaseLost),
// by id.
func sharedEntities(t *testing.T, r *testcontainers.RedisNamespace, s Strategy) []*Entity[user] {
	p := Policy{Strategy: s, TTL: time.Minute, NullTTL: time.Minute, WaitTimeout: time.Minute, MaxConcurrentLoads: -1}
	ents := make([]*Entity[user], sharedProcs)
	for i := range ents {
		ents[i] = newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	}
	return ents
}

func sharedIDList() (present, absent []string) {
	for i := 0; i < sharedIDs; i++ {
		present = append(present, strconv.Itoa(i))
	}
	for i := 0; i < 5; i++ {
		absent = append(absent, "x"+strconv.Itoa(i))
	}
	return present, absent
}

// sharedRound runs every goroutine's GetMany of ids at once and checks
// each result: all of present, none of absent, no error.
func sharedRound(t *testing.T, ents []*Entity[user], present, absent []string, load func(context.Context, []string) (map[string]user, error)) {
	t.Helper()
	ids := append(append([]string{}, present...), absent...)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var bad atomic.Int64
	for _, e := range ents {
		for g := 0; g < sharedGoroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				got, err := e.GetMany(context.Background(), ids, load)
				if err != nil {
					t.Errorf("GetMany: %v", err)
					bad.Add(1)
					return
				}
				ok := len(got) == len(present)
				for _, id := range present {
					ok = ok && got[id].ID == id
				}
				if !ok {
					t.Errorf("GetMany returned %d values, want the %d present ids", len(got), len(present))
					bad.Add(1)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	if bad.Load() != 0 {
		t.FailNow()
	}
}

func testGetManyShared(t *testing.T, r *testcontainers.RedisNamespace, s Strategy) {
	ents := sharedEntities(t, r, s)
	present, absent := sharedIDList()
	b := &batchLoader{delay: 50 * time.Millisecond, absent: map[string]bool{}}
	for _, id := range absent {
		b.absent[id] = true
	}
	lockWaits := func() (n uint64) {
		for _, e := range ents {
			n += e.Stats().LockWaits
		}
		return n
	}
	// The first load holds its leases until another caller is seen waiting
	// for them, so that the round overlaps however slow the machine: on a
	// loaded one, the first caller once loaded and stored every id before
	// the others had started.
	var overlapped atomic.Bool
	b.onLoad = func([]string) {
		for deadline := time.Now().Add(30 * time.Second); !overlapped.Load() && lockWaits() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		overlapped.Store(true)
	}
	lost := lostLeases(t, ents[0], append(append([]string{}, present...), absent...))
	sharedRound(t, ents, present, absent, b.load)
	b.checkLoadsExplained(t, present, 1, lost())
	b.checkLoadsExplained(t, absent, 1, lost())
	waits := lockWaits()
	var lostN uint64
	for _, e := range ents {
		lostN += e.Stats().LeasesLost
	}
	t.Logf("%v: %d loader calls, %d lock waits, %d leases lost", s, b.calls, waits, lostN)
	if waits == 0 {
		t.Fatal("no caller waited for another's leases: the scenario did not overlap")
	}

	// The next round after an Invalidate of 10 ids loads each of them once.
	if err := ents[1].Invalidate(context.Background(), present[:10]...); err != nil {
		t.Fatal(err)
	}
	sharedRound(t, ents, present, absent, b.load)
	b.checkLoadsExplained(t, present[:10], 2, lost())
	b.checkLoadsExplained(t, present[10:], 1, lost())
	b.checkLoadsExplained(t, absent, 1, lost())
}

// Concurrent GetMany calls in several processes load each cold id once.
func TestGetMany_sharedLoads(t *testing.T) {
	t.Parallel()
	for _, s := range []Strategy{Mutex, AsyncRefresh, EarlyRefresh} {
		t.Run(s.String(), func(t *testing.T) { testGetManyShared(t, testcontainers.Redis(t), s) })
	}
}

func TestGetMany_sharedLoads_cluster(t *testing.T) {
	t.Parallel()
	testGetManyShared(t, testcontainers.RedisCluster(t), Mutex)
}

// An Invalidate while a batch load runs (the loader read the old rows)
// refuses its stores; exactly one more load of each invalidated id
// follows, and every caller still gets every value.
//
// The refused stores are exactly those of the invalidated ids' loads that
// read their versions before the Invalidate: one per id (10) unless a
// holder's lease lapsed before its loader's Invalidate ran, when the
// caller that took the lapsed lease read the old version too and is
// refused as well (see TestGetMany_invalidatedMidLoad_lapsedLease). That
// was the cause of the 13 refusals seen once under -race on a busy
// machine: each extra refusal is of an invalidated id, with a lost lease.
func TestGetMany_sharedLoads_invalidatedMidLoad(t *testing.T) {
	r := testcontainers.Redis(t)
	ents := sharedEntities(t, r, Mutex)
	present, absent := sharedIDList()
	inv := map[string]bool{}
	for _, id := range present[:10] {
		inv[id] = true
	}
	var invalidated sync.Map
	b := &batchLoader{delay: 50 * time.Millisecond, absent: map[string]bool{}}
	for _, id := range absent {
		b.absent[id] = true
	}
	b.onLoad = func(ids []string) {
		for _, id := range ids {
			if _, done := invalidated.LoadOrStore(id, true); inv[id] && !done {
				if err := ents[2].Invalidate(context.Background(), id); err != nil {
					t.Error(err)
				}
			}
		}
	}
	all := append(append([]string{}, present...), absent...)
	lost := lostLeases(t, ents[0], all)
	refused := rejectedSets(t, ents[0], all)
	sharedRound(t, ents, present, absent, b.load)
	b.checkLoadsExplained(t, present[:10], 2, lost())
	b.checkLoadsExplained(t, present[10:], 1, lost())
	b.checkLoadsExplained(t, absent, 1, lost())
	var rejected uint64
	for _, e := range ents {
		rejected += e.Stats().RejectedSets
	}
	byID, lostByID := refused(), lost()
	var want, lostInv uint64
	for _, id := range all {
		got := byID[id]
		switch {
		case !inv[id] && len(got) != 0:
			t.Errorf("id %s: refused stores %v, want none (not invalidated)", id, got)
		case inv[id] && (got[rejectedVersion] < 1 || got[rejectedVersion] > 1+lostByID[id] || len(got) != 1):
			t.Errorf("id %s: refused stores %v, want 1 for its version plus at most its %d lost leases", id, got, lostByID[id])
		}
		if inv[id] {
			want += uint64(got[rejectedVersion])
			lostInv += uint64(lostByID[id])
		}
	}
	t.Logf("rejected sets: %d (%d leases of the invalidated ids lost)", rejected, lostInv)
	if rejected != want || (lostInv == 0 && rejected != uint64(len(inv))) {
		t.Fatalf("rejected sets = %d, want %d: one per invalidated id (%d), more only with a lost lease (%d)", rejected, want, len(inv), lostInv)
	}
}

// rejectedSets counts, by id and reason, the stores of e's ids that any
// entity refuses (EventRejectedSet) while the test runs.
func rejectedSets(t *testing.T, e *Entity[user], ids []string) (byID func() map[string]map[string]int) {
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
	refused := map[string]map[string]int{}
	h := func(key, reason string) {
		if id, ok := idOf[key]; ok {
			mu.Lock()
			if refused[id] == nil {
				refused[id] = map[string]int{}
			}
			refused[id][reason]++
			mu.Unlock()
		}
	}
	rejectedSetHook.Store(&h)
	t.Cleanup(func() { rejectedSetHook.Store(nil) })
	return func() map[string]map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]map[string]int, len(refused))
		for id, m := range refused {
			out[id] = maps.Clone(m)
		}
		return out
	}
}

// The extra refusals of TestGetMany_sharedLoads_invalidatedMidLoad, step
// by step: a holder's leases lapse while it loads (here deleted, as a
// lapse does), another caller takes them and loads the same versions, and
// then the Invalidate comes. Both loads read the old row, so both stores
// of the invalidated id are refused (2, not 1), and a third load stores
// it; the id not invalidated is stored by both, refused by neither. The
// first holder counts both of its leases lost: every extra load and every
// extra refusal comes with a lost lease.
func TestGetMany_invalidatedMidLoad_lapsedLease(t *testing.T) {
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, TTL: time.Minute, LockTTL: time.Minute, WaitTimeout: time.Minute}
	a := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	b := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	c := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	ids := []string{"1", "2"}
	lost := lostLeases(t, a, ids)
	refused := rejectedSets(t, a, ids)
	ctx := context.Background()

	// blocked returns a loader that says when it runs and then waits for
	// release, with a channel for its GetMany's result.
	loads := map[string]int{}
	var mu sync.Mutex
	blocked := func(e *Entity[user], entered, release chan struct{}) <-chan error {
		done := make(chan error, 1)
		go func() {
			got, err := e.GetMany(ctx, ids, func(ctx context.Context, ids []string) (map[string]user, error) {
				mu.Lock()
				for _, id := range ids {
					loads[id]++
				}
				mu.Unlock()
				close(entered)
				<-release
				return map[string]user{"1": {ID: "1"}, "2": {ID: "2"}}, nil
			})
			if err == nil && len(got) != 2 {
				err = fmt.Errorf("got %v, want both ids", got)
			}
			done <- err
		}()
		return done
	}
	aIn, aGo := make(chan struct{}), make(chan struct{})
	aDone := blocked(a, aIn, aGo)
	<-aIn
	for _, id := range ids { // a's leases lapse while it loads
		key, _ := a.Key(id)
		if err := r.NewClient(t).Del(ctx, key+":lock").Err(); err != nil {
			t.Fatal(err)
		}
	}
	bIn, bGo := make(chan struct{}), make(chan struct{})
	bDone := blocked(b, bIn, bGo)
	<-bIn // b took the lapsed leases and read the same versions as a
	if err := c.Invalidate(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	close(bGo)
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	close(aGo)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	cIn, cGo := make(chan struct{}), make(chan struct{})
	cDone := blocked(c, cIn, cGo)
	select {
	case <-cIn: // the third load, of id 1 only (2 is a hit), stored
	case err := <-cDone:
		t.Fatalf("c's GetMany returned %v without loading id 1", err)
	}
	close(cGo)
	if err := <-cDone; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	n1, n2 := loads["1"], loads["2"]
	mu.Unlock()
	if n1 != 3 || n2 != 2 {
		t.Fatalf("loads of 1, 2 = %d, %d; want 3, 2", n1, n2)
	}
	want := map[string]map[string]int{"1": {rejectedVersion: 2}}
	if got := refused(); !reflect.DeepEqual(got, want) {
		t.Fatalf("refused stores = %v, want %v", got, want)
	}
	if got := lost(); got["1"] != 1 || got["2"] != 1 {
		t.Fatalf("lost leases = %v, want one of each id (a's)", got)
	}
	if n := a.Stats().RejectedSets + b.Stats().RejectedSets + c.Stats().RejectedSets; n != 2 {
		t.Fatalf("rejected sets = %d, want 2", n)
	}
}

// holdLeases starts a GetMany of ids on holder whose loader blocks until
// release is closed and then fails. It returns once the loader runs (the
// leases are held) and a channel with GetMany's error.
func holdLeases(t *testing.T, holder *Entity[user], ids []string, release chan struct{}) <-chan error {
	t.Helper()
	entered := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := holder.GetMany(context.Background(), ids, func(ctx context.Context, ids []string) (map[string]user, error) {
			close(entered)
			<-release
			return nil, errors.New("db down")
		})
		done <- err
	}()
	<-entered
	return done
}

// Waiters whose lease holder's loader fails take the leases it gives up
// and load the ids themselves, long before WaitTimeout.
func TestGetMany_holderFails(t *testing.T) {
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: time.Minute}
	holder := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	waiter := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	ids := []string{"1", "2", "3", "4", "5"}
	release := make(chan struct{})
	held := holdLeases(t, holder, ids, release)

	b := &batchLoader{}
	type result struct {
		got map[string]user
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := waiter.GetMany(context.Background(), append(ids, "6"), b.load)
		done <- result{got, err}
	}()
	waitFor(t, 10*time.Second, func() bool { return waiter.Stats().LockWaits == 5 })
	close(release)
	if err := <-held; err == nil || err.Error() != "db down" {
		t.Fatalf("holder's GetMany err = %v, want its loader's error", err)
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("waiter still waiting 30s after the holder failed")
	}
	if res.err != nil || len(res.got) != 6 {
		t.Fatalf("waiter got %d values, %v; want all 6", len(res.got), res.err)
	}
	b.checkLoads(t, append(ids, "6"), 1)
	if s := waiter.Stats(); s.Loads != 2 || s.LockTimeouts != 0 {
		t.Fatalf("waiter stats = %+v; want its own batch (6) and one of the failed holder's ids", s)
	}
}

// With every leasing strategy, one expiry costs one load only while
// loads succeed: a holder whose load fails (here its database link, as a
// fault leaves a pooled connection broken) gives its leases up, and a
// waiter loads the ids again. So the chaos loads check's "one load per
// expiry" holds for AsyncRefresh and EarlyRefresh as for Mutex, plus one
// load per failed load (EventLoadError), which the check counts among the
// events that explain a load.
func TestGetMany_holderFails_everyLeasingStrategy(t *testing.T) {
	for _, s := range []Strategy{Mutex, AsyncRefresh, EarlyRefresh} {
		t.Run(s.String(), func(t *testing.T) {
			r := testcontainers.Redis(t)
			p := Policy{Strategy: s, LockTTL: time.Minute, WaitTimeout: time.Minute}
			holder := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
			waiter := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
			release := make(chan struct{})
			held := holdLeases(t, holder, []string{"1"}, release)
			b := &batchLoader{}
			done := make(chan error, 1)
			go func() {
				_, err := waiter.Get(context.Background(), "1", func(ctx context.Context, id string) (user, error) {
					got, err := b.load(ctx, []string{id})
					return got[id], err
				})
				done <- err
			}()
			waitFor(t, 10*time.Second, func() bool { return waiter.Stats().LockWaits == 1 })
			close(release)
			if err := <-held; err == nil {
				t.Fatal("the holder's load did not fail")
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			b.checkLoads(t, []string{"1"}, 1)
			hs, ws := holder.Stats(), waiter.Stats()
			if hs.LoadErrors != 1 || ws.Loads != 1 || hs.LeasesLost+ws.LeasesLost != 0 {
				t.Fatalf("holder %+v, waiter %+v: want one failed load, then one load, no lease lost", hs, ws)
			}
		})
	}
}

// Ids whose holder never finishes are missing after WaitTimeout, with
// ErrWaitTimeout counted per id; the rest of the batch is returned.
func TestGetMany_waitTimeout(t *testing.T) {
	r := testcontainers.Redis(t)
	p := Policy{Strategy: Mutex, LockTTL: time.Minute, WaitTimeout: 300 * time.Millisecond}
	holder := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	waiter := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p)
	release := make(chan struct{})
	held := holdLeases(t, holder, []string{"1", "2", "3"}, release)
	defer func() { close(release); <-held }()

	b := &batchLoader{}
	got, err := waiter.GetMany(context.Background(), []string{"1", "2", "3", "4", "5"}, b.load)
	if !errors.Is(err, ErrWaitTimeout) {
		t.Fatalf("err = %v, want ErrWaitTimeout", err)
	}
	if len(got) != 2 || got["4"].ID != "4" || got["5"].ID != "5" {
		t.Fatalf("got %v, want the two ids nobody else held", got)
	}
	if s := waiter.Stats(); s.LockWaits != 3 || s.LockTimeouts != 3 || s.Loads != 1 {
		t.Fatalf("stats = %+v", s)
	}
}

// With None and SingleFlight, concurrent GetMany calls still load their
// misses directly, each caller on its own: every loader call below waits
// until all four callers are inside the loader at once, which a shared
// load would never allow.
func TestGetMany_directStrategies(t *testing.T) {
	for _, s := range []Strategy{None, SingleFlight} {
		t.Run(s.String(), func(t *testing.T) {
			r := testcontainers.Redis(t)
			const callers = 4
			p := Policy{Strategy: s, WaitTimeout: time.Second}
			ents := []*Entity[user]{
				newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p),
				newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "user", p),
			}
			var inside atomic.Int64
			all := make(chan struct{})
			load := func(ctx context.Context, ids []string) (map[string]user, error) {
				if inside.Add(1) == callers {
					close(all)
				}
				select {
				case <-all:
				case <-time.After(20 * time.Second):
					return nil, errors.New("the other callers never loaded")
				}
				out := map[string]user{}
				for _, id := range ids {
					out[id] = user{ID: id}
				}
				return out, nil
			}
			var wg sync.WaitGroup
			for i := 0; i < callers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got, err := ents[i%2].GetMany(context.Background(), []string{"1", "2", "3"}, load)
					if err != nil || len(got) != 3 {
						t.Errorf("GetMany = %v, %v", got, err)
					}
				}()
			}
			wg.Wait()
			for _, e := range ents {
				if s := e.Stats(); s.LockWaits != 0 {
					t.Fatalf("stats = %+v; a direct strategy waited", s)
				}
			}
		})
	}
}

// A cold batch under Mutex costs the same three round trips as before
// (MGET, the leases, the stores); a warm one costs one.
func TestGetMany_leasedRoundTrips(t *testing.T) {
	c, client, rt := countedCache(t, testcontainers.Redis(t))
	e := newEntity[user](t, c, "user", Policy{Strategy: Mutex, NullTTL: time.Minute})
	ctx := context.Background()
	for _, s := range []*script.Script{leaseScript, fillScript} {
		if err := s.Load(ctx, client).Err(); err != nil {
			t.Fatal(err)
		}
	}
	present, absent := sharedIDList()
	ids := append(present, absent...)
	b := &batchLoader{absent: map[string]bool{"x0": true, "x1": true, "x2": true, "x3": true, "x4": true}}
	for round, want := range []int64{3, 1} {
		rt.n.Store(0)
		got, err := e.GetMany(ctx, ids, b.load)
		if err != nil || len(got) != len(present) {
			t.Fatalf("round %d: %d values, %v", round, len(got), err)
		}
		if n := rt.n.Load(); n != want {
			t.Fatalf("round %d: %d round trips, want %d", round, n, want)
		}
	}
	if b.calls != 1 {
		t.Fatalf("loader calls = %d, want 1", b.calls)
	}
}
