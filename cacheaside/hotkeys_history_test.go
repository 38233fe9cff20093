package cacheaside

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/testcontainers"
)

const (
	hotHistProcs   = 4
	hotHistReaders = 4 // per process, besides one writer
	hotHistIDs     = 48
	hotHistRun     = 1500 * time.Millisecond
	hotHistMin     = 50 // writes, promotions, demotions and local hits at least
)

// fences counts, per key, the fence writes a process's invalidation feed
// has delivered. A write of the history below completes when every
// process has delivered the fence written after it: Redis sends a node's
// changes to a tracking connection in order, so each process has then
// dispatched the write's invalidation too. That is the near cache's
// promise across processes (the package doc): a read that begins once
// the write's invalidation reached its process sees the write.
type fences struct {
	mu   sync.Mutex
	cond *sync.Cond
	seen map[string]int // guarded by mu
	done bool           // guarded by mu: the run ended, nobody waits any more
}

func newFences() *fences {
	f := &fences{seen: map[string]int{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func (f *fences) trace(key string) {
	if !strings.HasSuffix(key, ":fence") {
		return
	}
	f.mu.Lock()
	f.seen[key]++
	f.mu.Unlock()
	f.cond.Broadcast()
}

func (f *fences) count(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[key]
}

// await waits until the fence key was delivered more than n times, or
// the run ended (then it reports false).
func (f *fences) await(key string, n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.seen[key] <= n && !f.done {
		f.cond.Wait()
	}
	return f.seen[key] > n
}

// end releases every await.
func (f *fences) end() {
	f.mu.Lock()
	f.done = true
	f.mu.Unlock()
	f.cond.Broadcast()
}

// skewedID picks one of hotHistIDs ids, the first few far more often.
func skewedID() int {
	u := rand.Float64()
	return int(float64(hotHistIDs) * u * u * u * u)
}

// runHotHistory runs hotHistProcs processes whose Caches promote hot keys
// (small budget, fast aging: keys are promoted and demoted all along) on a
// skewed keyspace: readers (Get, GetMany) in each, and a writer in each
// (the source of truth, then Invalidate or Set, then the fence: see
// fences), keys promoted from minReads reads. It returns the reads older
// than a write that completed before they began, and the processes'
// summed stats.
func runHotHistory(t *testing.T, r *testcontainers.RedisNamespace, minReads int) ([]string, Stats, int, int) {
	hp := HotKeyPolicy{Budget: minHotKeyBudget, MinReads: minReads, Sample: 2, TTL: time.Minute}
	ents := make([]*Entity[user], hotHistProcs)
	feeds := make([]*fences, hotHistProcs)
	for i := range ents {
		c := newCache(t, r.NewClient(t), r.Namespace, &Options{HotKeys: &hp})
		feeds[i] = newFences()
		c.traceFeed = feeds[i].trace // before the feed starts (with the entity)
		ents[i] = newEntity[user](t, c, "hot", Policy{TTL: time.Minute, Strategy: Mutex, LockTTL: time.Second})
		waitLocal(t, c)
	}
	db := &historyDB{vers: make([]atomic.Int64, hotHistIDs)}
	var locks [hotHistIDs]sync.Mutex // one write of an id at a time: its fence is its own
	var h history
	w := newCrew()
	ctx := context.Background()
	mix := readMix{draw: skewedID, many: 4, ids: 3}
	for _, e := range ents {
		for range hotHistReaders {
			w.loop(func() bool { historyRead(ctx, e, db, &h, w.report, mix); return true })
		}
		w.loop(func() bool {
			if !hotHistWrite(ctx, e, db, &h, w.report, feeds, &locks) {
				return false
			}
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // pacing, not synchronisation
			return true
		})
	}
	sum := func() Stats {
		var s Stats
		for _, e := range ents {
			es := e.Stats()
			s.LocalHits += es.LocalHits
			s.LocalMisses += es.LocalMisses
			s.HotPromotions += es.HotPromotions
			s.HotDemotions += es.HotDemotions
			s.LocalInvalidations += es.LocalInvalidations
		}
		return s
	}
	halt := func() error {
		w.stop.Store(true)
		for _, f := range feeds {
			f.end()
		}
		return w.wait()
	}
	start := time.Now()
	for {
		s := sum()
		if time.Since(start) >= hotHistRun && h.size() >= hotHistMin && s.HotPromotions >= hotHistMin &&
			s.HotDemotions >= hotHistMin && s.LocalHits >= hotHistMin {
			break
		}
		if time.Since(start) > 60*time.Second {
			_ = halt()
			t.Fatalf("too little happened in a minute: %d writes, %+v", h.size(), s)
		}
		time.Sleep(20 * time.Millisecond) // the run itself, not a synchronisation
	}
	if err := halt(); err != nil {
		t.Fatal(err)
	}
	return h.stale(hotHistIDs), sum(), len(h.reads), len(h.writes)
}

// hotHistWrite is one write of a skewed id by e's process: the source
// of truth, then Invalidate or Set, then the id's fence (the id locked
// throughout: its fence is its own), recorded once
// every process's feed delivered the fence. It returns false when the run
// is to end (an error, reported, or a feed that ended).
func hotHistWrite(ctx context.Context, e *Entity[user], db *historyDB, h *history, report func(error),
	feeds []*fences, locks *[hotHistIDs]sync.Mutex) bool {
	n := skewedID()
	id := strconv.Itoa(n)
	fence := e.prefix + id + "}:fence"
	locks[n].Lock()
	defer locks[n].Unlock()
	seen := make([]int, len(feeds))
	for i, f := range feeds {
		seen[i] = f.count(fence)
	}
	ver := db.vers[n].Add(1)
	var err error
	if rand.IntN(2) == 0 {
		err = e.Invalidate(ctx, id)
	} else {
		err = e.Set(ctx, id, user{ID: id, Ver: int(ver)})
	}
	if err == nil {
		err = e.c.client.Set(ctx, fence, ver, time.Minute).Err()
	}
	if err != nil {
		report(err)
		return false
	}
	for i, f := range feeds {
		if !f.await(fence, seen[i]) {
			return false
		}
	}
	h.add(&h.writes, historyOp{id: n, at: time.Now(), ver: int(ver)})
	return true
}

// Processes that promote their hot keys on their own never serve a read
// older than a write whose invalidation reached them before the read
// began, while keys are promoted, demoted (cooled, evicted for the
// budget, expired), invalidated and written concurrently. With the
// promoted keys' invalidation rule off
// (testswitch.HotKeyInvalidationOff) the same run finds stale reads. Keys
// are promoted from the default MinReads and from 4 (fewer promotions,
// more demotions by cooling).
func TestHotKeys_history(t *testing.T) {
	t.Parallel()
	for _, minReads := range hotHistMinReads {
		t.Run("minReads="+strconv.Itoa(minReads), func(t *testing.T) {
			t.Parallel()
			backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
				bad, s, reads, writes := runHotHistory(t, r, minReads)
				t.Logf("%d reads, %d writes; local hits %d (ratio %.2f), promotions %d, demotions %d, invalidations %d; %d stale",
					reads, writes, s.LocalHits, s.LocalHitRatio(), s.HotPromotions, s.HotDemotions, s.LocalInvalidations, len(bad))
				if len(bad) > 0 {
					t.Fatalf("%d stale reads, first: %s", len(bad), bad[0])
				}
			})
		})
	}
}

// hotHistMinReads are the MinReads the history runs with.
var hotHistMinReads = []int{DefaultHotKeyMinReads, 4}

func TestHotKeys_history_ruleOff(t *testing.T) {
	// Not parallel: the switch is global to the package.
	r := testcontainers.Redis(t)
	testswitch.HotKeyInvalidationOff.Store(true)
	defer testswitch.HotKeyInvalidationOff.Store(false)
	for _, minReads := range hotHistMinReads {
		bad, s, reads, writes := runHotHistory(t, r, minReads)
		t.Logf("rule off, MinReads %d: %d reads, %d writes, promotions %d, demotions %d; %d stale", minReads, reads, writes, s.HotPromotions, s.HotDemotions, len(bad))
		if len(bad) == 0 {
			t.Fatalf("MinReads %d: no stale read with the promoted keys' invalidation off: the history test cannot see the rule", minReads)
		}
	}
}
