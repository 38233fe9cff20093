package cacheaside

import (
	"context"
	"errors"
	"hash/maphash"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestHotKeyPolicy_defaults(t *testing.T) {
	p, err := HotKeyPolicy{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	want := HotKeyPolicy{Budget: DefaultHotKeyBudget, MinReads: DefaultHotKeyMinReads, Sample: DefaultHotKeySample, TTL: DefaultHotKeyTTL}
	if p != want {
		t.Fatalf("defaults %+v, want %+v", p, want)
	}
	if p, _ := (HotKeyPolicy{Sample: 5}).withDefaults(); p.Sample != 8 {
		t.Fatalf("Sample 5 rounded to %d, want 8", p.Sample)
	}
	if p, _ := (HotKeyPolicy{Sample: 1}).withDefaults(); p.Sample != 1 {
		t.Fatalf("Sample 1 became %d", p.Sample)
	}
	for _, bad := range []HotKeyPolicy{{Budget: -1}, {Budget: minHotKeyBudget - 1}, {MinReads: -1}, {Sample: -2}, {TTL: -time.Second}} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
}

// A count-min sketch never counts a key under its real count, and keeps
// the counts of keys it never saw low.
func TestSketch_estimate(t *testing.T) {
	s := newSketch(16<<10, 1) // 1024 counters a row
	seed := maphash.MakeSeed()
	h := func(i int) uint64 { return maphash.String(seed, strconv.Itoa(i)) }
	counts := map[int]uint32{}
	for k := range 100 { // a skewed load: key k is added 100/(k+1)+1 times
		for range 100/(k+1) + 1 {
			s.add(h(k), 1)
			counts[k]++
		}
	}
	if s.adds.Load() >= s.reset {
		t.Fatalf("test too long: the sketch was halved (%d adds, reset %d)", s.adds.Load(), s.reset)
	}
	for k, n := range counts {
		if got := s.estimate(h(k)); got < n {
			t.Fatalf("key %d: estimate %d under its count %d", k, got, n)
		}
	}
	high := 0
	for k := 10000; k < 11000; k++ {
		if s.estimate(h(k)) > 5 {
			high++
		}
	}
	if high > 10 {
		t.Fatalf("%d of 1000 unseen keys estimated above 5", high)
	}
}

// Every reset units added the sketch halves its counters (aging).
func TestSketch_halves(t *testing.T) {
	s := newSketch(1<<10, 1) // the smallest: 64 counters a row, reset 64
	if s.mask != 63 || s.reset != 64 || s.bytes() != 1<<10 {
		t.Fatalf("mask %d, reset %d, bytes %d", s.mask, s.reset, s.bytes())
	}
	hot, other := uint64(0x1234567890abcdef), uint64(0xfedcba0987654321)
	halved := 0
	for range 40 {
		if s.add(hot, 1) {
			halved++
		}
	}
	for i := uint64(0); i < s.reset-40-1; i++ {
		if s.add(other, 1) {
			halved++
		}
	}
	before := s.estimate(hot)
	if before < 40 || halved != 0 {
		t.Fatalf("estimate %d, halved %d before the reset", before, halved)
	}
	if !s.add(other, 1) {
		t.Fatal("the reset-th addition did not halve")
	}
	if got := s.estimate(hot); got != before/2 {
		t.Fatalf("after halving: %d, want %d", got, before/2)
	}
}

// An addition of n units that crosses a multiple of reset halves once;
// the reset is a row's width times the unit the sketch was made for.
func TestSketch_unitsHalve(t *testing.T) {
	s := newSketch(1<<10, 8) // 64 counters a row, reset 512 units
	if s.reset != 512 {
		t.Fatalf("reset %d, want 512", s.reset)
	}
	h := uint64(0x1234567890abcdef)
	for i := range 63 {
		if s.add(h, 8) {
			t.Fatalf("halved at addition %d, %d units", i+1, s.adds.Load())
		}
	}
	if got := s.estimate(h); got != 63*8 {
		t.Fatalf("estimate %d, want %d", got, 63*8)
	}
	if !s.add(h, 8) { // 512 units
		t.Fatal("the addition reaching reset did not halve")
	}
	if got := s.estimate(h); got != 64*8/2 {
		t.Fatalf("after halving: %d, want %d", got, 64*8/2)
	}
}

// Estimates are in reads: a read that goes to Redis counts whatever
// Sample is, so a key read MinReads times from Redis is promoted (it was
// counted one time in Sample, and a key read a few hundred times could
// stay unpromoted), and a counted local hit weighs Sample reads, so that
// a promoted key's estimate stays near its reads.
func TestHotness_readsNotSamples(t *testing.T) {
	hn := newHotness(HotKeyPolicy{Budget: 64 << 20, MinReads: 4, Sample: 64, TTL: time.Hour})
	key := uint64(0x5eed)
	for range 3 {
		hn.miss(key)
	}
	if hn.hot(key) {
		t.Fatal("promoted after 3 reads from Redis, MinReads 4")
	}
	hn.miss(key)
	if !hn.hot(key) {
		t.Fatalf("not promoted after 4 reads from Redis (estimate %d)", hn.sk.estimate(key))
	}
	hits := uint64(0xbeef)
	for range 64 * 100 {
		hn.hit(hits)
	}
	// 100 counted hits expected of 6,400 (σ ≈ 10): ±40 % is 4 σ.
	if got := hn.sk.estimate(hits); got < 3840 || got > 8960 {
		t.Fatalf("6,400 local hits estimated at %d reads", got)
	}
}

// hotProcess is one process whose Cache promotes hot keys of entity
// "user" (no Policy.Local).
func hotProcess(t *testing.T, r *testcontainers.RedisNamespace, hp HotKeyPolicy) (*Cache, *Entity[user]) {
	t.Helper()
	c := newCache(t, r.NewClient(t), r.Namespace, &Options{HotKeys: &hp})
	e := newEntity[user](t, c, "user", Policy{TTL: time.Hour})
	waitLocal(t, c)
	return c, e
}

// Off by default; a Policy.Local wins over HotKeys.
func TestHotKeys_offByDefault_localWins(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	off := newEntity[user](t, newCache(t, r.NewClient(t), r.Namespace, nil), "a", Policy{})
	if off.local != nil {
		t.Fatal("a near cache without Policy.Local nor HotKeys")
	}
	c := newCache(t, r.NewClient(t), r.Namespace, &Options{HotKeys: &HotKeyPolicy{}})
	if e := newEntity[user](t, c, "b", Policy{}); e.local == nil || e.local.hot == nil {
		t.Fatal("HotKeys set: no automatic near cache")
	}
	e := newEntity[user](t, c, "c", Policy{Local: &LocalPolicy{MaxEntries: 7}})
	if e.local == nil || e.local.hot != nil || e.local.p.MaxEntries != 7 {
		t.Fatalf("Policy.Local set: %+v", e.local)
	}
	if _, err := New(r.Client, &Options{HotKeys: &HotKeyPolicy{Budget: 1}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("tiny budget: %v", err)
	}
}

// A key read MinReads times is promoted and served locally; a key read
// once is not; a write in another process reaches the promoted copy.
func TestHotKeys_promoteAndInvalidate(t *testing.T) {
	t.Parallel()
	backends(t, func(t *testing.T, r *testcontainers.RedisNamespace) {
		src := newDB()
		ctx := context.Background()
		_, reader := hotProcess(t, r, HotKeyPolicy{MinReads: 4, Sample: 1, TTL: time.Hour})
		_, writer := hotProcess(t, r, HotKeyPolicy{MinReads: 4, Sample: 1, TTL: time.Hour})
		if _, err := reader.Get(ctx, "cold", src.load); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := reader.Get(ctx, "hot", src.load); err != nil {
				t.Fatal(err)
			}
		}
		if s := reader.Stats(); s.LocalHits != 0 || s.HotPromotions != 0 {
			t.Fatalf("promoted before MinReads: %+v", s)
		}
		// Both fills' SETs come back as changes of keys this process read:
		// wait for them, or one could demote the copy warm promotes.
		waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalInvalidations >= 2 })
		warm(t, reader, "hot", src.load)
		if _, err := reader.Get(ctx, "cold", src.load); err != nil {
			t.Fatal(err)
		}
		// The hot key is held and the cold one is not.
		held := func(id string) bool {
			_, ok := reader.local.store.GetIfPresent(reader.local.id(reader.prefix + id + "}"))
			return ok
		}
		if s := reader.Stats(); !held("hot") || held("cold") || s.HotPromotions != 1 || s.LocalBytes == 0 {
			t.Fatalf("after warming one key: hot held %v, cold held %v, %+v", held("hot"), held("cold"), s)
		}
		ver := src.bump("hot")
		if err := writer.Invalidate(ctx, "hot"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool {
			v, err := reader.Get(ctx, "hot", src.load)
			return err == nil && v.Ver == ver
		})
		if v := warm(t, reader, "hot", src.load); v.Ver != ver {
			t.Fatalf("promoted again with %+v, want version %d", v, ver)
		}
	})
}

// A key that is no longer read is demoted when the sketch ages.
func TestHotKeys_demoteCooled(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	src := newDB()
	ctx := context.Background()
	_, e := hotProcess(t, r, HotKeyPolicy{Budget: minHotKeyBudget, MinReads: 8, Sample: 1, TTL: time.Hour})
	warm(t, e, "hot", src.load)
	id := func() string { return e.local.id(e.prefix + "hot}") }
	if _, ok := e.local.store.GetIfPresent(id()); !ok {
		t.Fatal("not promoted")
	}
	// Other reads, each key once: the sketch halves every 64 of them.
	for i := 0; e.Stats().HotDemotions == 0; i++ {
		if i > 100000 {
			t.Fatalf("no demotion after %d reads: %+v", i, e.Stats())
		}
		if _, err := e.Get(ctx, "other"+strconv.Itoa(i), src.load); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, func() bool { _, ok := e.local.store.GetIfPresent(id()); return !ok })
}

// The tier stays within its budget: many hot keys of about 1 KiB each
// evict one another (each eviction a demotion), and the weight kept is
// at most the budget less the sketch.
func TestHotKeys_budget(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	ctx := context.Background()
	const budget = 128 << 10
	_, e := hotProcess(t, r, HotKeyPolicy{Budget: budget, MinReads: 1, Sample: 1, TTL: time.Hour})
	pad := strings.Repeat("x", 1000)
	load := func(_ context.Context, id string) (user, error) { return user{ID: id, Name: pad}, nil }
	const keys = 400 // ~450 KiB of values
	for range 3 {
		for k := range keys {
			if _, err := e.Get(ctx, strconv.Itoa(k), load); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.local.store.CleanUp()
	s := e.Stats()
	limit := uint64(budget) - uint64(e.local.hot.sk.bytes())
	if s.LocalBytes == 0 || s.LocalBytes > limit {
		t.Fatalf("local bytes %d, budget less sketch %d", s.LocalBytes, limit)
	}
	if s.HotPromotions < keys || s.LocalEvictions == 0 || s.HotDemotions < s.LocalEvictions {
		t.Fatalf("promotions %d, evictions %d, demotions %d", s.HotPromotions, s.LocalEvictions, s.HotDemotions)
	}
	if n := e.local.store.EstimatedSize(); n*1000 > budget {
		t.Fatalf("%d entries of ~1 KiB kept in a %d-byte budget", n, budget)
	}
	t.Logf("%d entries, %d bytes, %d promotions, %d demotions", e.local.store.EstimatedSize(), s.LocalBytes, s.HotPromotions, s.HotDemotions)
}

func TestStats_LocalHitRatio(t *testing.T) {
	if r := (Stats{}).LocalHitRatio(); r != 0 {
		t.Fatal(r)
	}
	if r := (Stats{LocalHits: 3, LocalMisses: 1}).LocalHitRatio(); r != 0.75 {
		t.Fatal(r)
	}
}
