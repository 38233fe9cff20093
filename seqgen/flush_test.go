package seqgen_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// Two generators (separate Redis clients and DB pools, as two processes
// would have) × 32 goroutines draw 200,000 numbers of one biz while the
// namespace's Redis keys are deleted twice: no duplicate, every number at
// or below the DB mark, and at most one segment skipped per deletion.
func TestGenerator_Next_flushSafety(t *testing.T) {
	t.Parallel()
	const (
		total     = 200_000
		workers   = 32 // per generator
		segment   = 1000
		deletions = 2
		batch     = 25 // odd workers draw with NextN
	)
	e := newEnv(t)
	db2, err := gorm.Open(postgres.Open(e.pg.DSN), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db2.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	// RedisTimeout and LeaseTTL (which bound a call's Redis calls and its
	// wait for another caller's reservation): a call slowed by the load of
	// this test (64 goroutines, -race) must not fall back to the DB, whose
	// segments add gaps.
	opts := func(o *seqgen.Options) {
		o.Width, o.Segment, o.RedisTimeout, o.LeaseTTL = 7, segment, time.Minute, time.Minute
	}
	gens := []*seqgen.Generator{
		e.gen(t, opts),
		newGen(t, e.r.NewClient(t), db2, e.opts(opts)),
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		budget  atomic.Int64 // numbers still to draw
		drawn   atomic.Int64
		mu      sync.Mutex
		all     = make([]int64, 0, total)
		failure error
		wg      sync.WaitGroup
	)
	budget.Store(total)
	fail := func(err error) {
		mu.Lock()
		if failure == nil {
			failure = err
		}
		mu.Unlock()
		cancel()
	}
	for _, g := range gens {
		for w := 0; w < workers; w++ {
			wg.Go(func() {
				mine := make([]int64, 0, total/(2*workers)+batch)
				for {
					n := int64(1)
					if w%2 == 1 {
						n = batch
					}
					if left := budget.Add(-n); left < 0 {
						n += left // the last claim takes what is left
						if n <= 0 {
							break
						}
					}
					var serials []string
					var err error
					if n == 1 {
						var s string
						s, err = g.Next(ctx, "ORD")
						serials = []string{s}
					} else {
						serials, err = g.NextN(ctx, "ORD", int(n))
					}
					if err != nil {
						fail(err)
						return
					}
					for _, s := range serials {
						mine = append(mine, counterOf(t, s, "ORD20261129"))
					}
					drawn.Add(n)
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			})
		}
	}

	// The deleter waits (without any sleep deciding the result) until a
	// third, then two thirds of the numbers are drawn.
	deleted := 0
	for i := 1; i <= deletions; i++ {
		for drawn.Load() < int64(i*total/(deletions+1)) && ctx.Err() == nil {
			waitABit()
		}
		if ctx.Err() != nil {
			break
		}
		if err := testcontainers.DeleteNamespace(context.Background(), e.r.Client, e.r.Namespace); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	wg.Wait()
	if failure != nil {
		t.Fatalf("drawing numbers: %v", failure)
	}
	if deleted != deletions {
		t.Fatalf("deleted the keys %d times, want %d", deleted, deletions)
	}
	if len(all) != total {
		t.Fatalf("drew %d numbers, want %d", len(all), total)
	}

	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("number %d issued twice", all[i])
		}
	}
	mark := dbMark(t, e.pg.DB, "ORD", "20261129")
	if top := all[len(all)-1]; top > mark {
		t.Fatalf("number %d above the DB mark %d", top, mark)
	}
	var gaps []int64 // sizes of the skipped ranges
	prev := int64(0)
	for _, v := range all {
		if v != prev+1 {
			gaps = append(gaps, v-prev-1)
		}
		prev = v
	}
	var skipped int64
	for _, g := range gaps {
		skipped += g
		if g > segment {
			t.Errorf("a gap of %d numbers, more than one segment (%d)", g, segment)
		}
	}
	// The promise (package doc) is about Segment numbers skipped per lost
	// key, not one skipped range: a refill in flight when the keys go may
	// leave its range apart from the re-seed's (a CI run under load saw
	// gaps [16 1 822] for two deletions).
	// A call that falls back to the DB (Stats.Fallbacks: Redis failed or
	// was slow, or it waited maxWait for another caller's reservation)
	// issues from a spare segment, whose rest is skipped as documented: at
	// most one segment more per such call.
	var fallbacks int64
	for _, g := range gens {
		fallbacks += int64(g.Stats().Fallbacks)
	}
	if skipped > (deletions+fallbacks)*segment {
		t.Errorf("%d gaps skipping %d numbers for %d deletions and %d fallbacks, want at most one segment (%d) for each", len(gaps), skipped, deletions, fallbacks, segment)
	}
	t.Logf("%d numbers, highest %d, DB mark %d, gaps %v, stats %+v and %+v", len(all), all[len(all)-1], mark, gaps, gens[0].Stats(), gens[1].Stats())
}
