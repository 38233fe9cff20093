package cdc_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// llitem is the row of the list-lines tests.
type llitem struct {
	ID         int64 `gorm:"primaryKey;autoIncrement:false"`
	CategoryID int64 `gorm:"not null"`
	Rank       int64 `gorm:"not null"`
}

// Lines that repo/cdc appends to a list's generation (PatchFromLog) land
// by the Invalidator's lag. In random rounds a plain-SQL UPDATE of a row
// holds its lock while a repository Update of the same row waits for it
// and commits after it; the Invalidator, behind a slow link, appends the
// plain-SQL change's line well after the repository write returned, and
// the repository write's in a later batch. Every list read after the
// repository write returned must show the row at the repository write's
// rank. Three ways that could fail: with the list's generation gone
// (evicted) the repository write bumps it, and reads load windows that
// hold both changes, so the older line must be skipped (the window's
// snapshot saw its transaction); with the generation there, the
// repository write appends its own line, and the older line must not be
// appended after it (the Invalidator bumps); and in a third of the rounds
// the repository write puts the row back at the rank it read before the
// plain-SQL change committed: it would look unmoved (no line of its own)
// were its statement not guarded, and the older line would take the row
// back.
func TestInvalidator_listLinesAfterWrite(t *testing.T) {
	t.Parallel()
	for _, evict := range []bool{true, false} {
		p := playListLines(t, 12, evict)
		if p.bad > 0 {
			t.Errorf("evict %v: %d of %d list reads took a row back past a repository write that completed", evict, p.bad, p.reads)
		}
		// What each case is about must have happened: log lines appended
		// to a generation the writer found evicted, writer's lines to one
		// it found there.
		if evict && p.logLines == 0 {
			t.Errorf("evict %v: the Invalidator patched no list: the test proves nothing", evict)
		}
		if !evict && p.writerLines == 0 {
			t.Errorf("evict %v: the repository write patched no list: the test proves nothing", evict)
		}
	}
}

// With the snapshot check off (testswitch.LogSnapshotOff) the reader
// applies the older line over a window that holds the newer write; with
// the order check off (testswitch.LogOrderOff) the Invalidator appends the
// older line after the repository write's own: the rounds find reads
// that show the row at the plain-SQL rank.
func TestInvalidator_listLinesAfterWrite_failsRuleOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		off   []*atomic.Bool
		evict bool
	}{
		{"snapshotOff", []*atomic.Bool{&testswitch.LogSnapshotOff}, true},
		{"orderOff", []*atomic.Bool{&testswitch.LogOrderOff}, false},
		// The re-assert (ListReassertOff) would cover a write that looks
		// unmoved, which is what the guard is for beside it.
		{"guardOff", []*atomic.Bool{&testswitch.BeforeGuardOff, &testswitch.ListReassertOff}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, off := range tc.off {
				off.Store(true)
				defer off.Store(false)
			}
			for attempt := range 3 {
				if p := playListLines(t, 12, tc.evict); p.bad > 0 {
					t.Logf("attempt %d: %d of %d list reads stale", attempt, p.bad, p.reads)
					return
				}
			}
			t.Error("three runs and no stale list read with the rule off: the test proves nothing")
		})
	}
}

// listLinesPlay is what playListLines saw: the list reads that showed
// the row elsewhere than the repository write left it, the reads made,
// and the lines the Invalidator and the repository writes appended.
type listLinesPlay struct {
	bad, reads            int
	logLines, writerLines int64
}

// playListLines plays rounds rounds, evicting the list's generation
// before each repository write when evict is set.
func playListLines(t *testing.T, rounds int, evict bool) (p listLinesPlay) {
	rn := testcontainers.Redis(t)
	e := newEnv(t, rn.Client, rn.Namespace)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&llitem{}); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "ALTER TABLE llitems REPLICA IDENTITY FULL")
	e.exec(t, "TRUNCATE llitems")
	e.exec(t, "INSERT INTO llitems SELECT g, 1, g * 10 FROM generate_series(1, 8) g")

	// The reading and writing process, and the Invalidator's, whose Redis
	// link is slow: its lines land well after the commits they follow.
	opts := &repo.Options{Name: "llitems", Policy: cacheaside.Policy{TTL: time.Hour}}
	query := repo.QueryOf{Name: "by_cat", Where: []string{"category_id"}, Order: "rank"}
	items, err := repo.New[llitem, int64](e.db, e.cache, opts)
	if err != nil {
		t.Fatal(err)
	}
	q, err := repo.NewQuery(items, query)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faultproxy.New(rn.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	proxy.Slow(10 * time.Millisecond)
	slowClient := redis.NewClient(&redis.Options{Addr: proxy.Addr()})
	t.Cleanup(func() { _ = slowClient.Close() })
	slowCache, err := cacheaside.New(slowClient, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slowCache.Close() })
	slowItems, err := repo.New[llitem, int64](e.db, slowCache, opts)
	if err != nil {
		t.Fatal(err)
	}
	slowQ, err := repo.NewQuery(slowItems, query)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot + "_ll"})
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Register(slowItems); err != nil {
		t.Fatal(err)
	}
	// The writing process registers its repository too, as every process
	// that writes must (it does not run the Invalidator): a round whose
	// repository write leaves the row at the rank the plain-SQL change
	// gave it re-asserts it (without, the list showed the row at its rank
	// before both until the Invalidator caught up: 2 of 10 runs failed).
	writerInv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot + "_ll"})
	if err != nil {
		t.Fatal(err)
	}
	if err := writerInv.Register(items); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inv.Drop(context.Background()) })
	run(t, inv)
	e.sync(t, inv)

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	listed := func() []int64 {
		rows, _, err := q.List(ctx, repo.Page{Size: 20}, int64(1))
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]int64, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		return ids
	}
	for range rounds {
		listed() // a window cached under the generation
		if evict {
			genKeys, err := rn.Client.Keys(ctx, rn.Namespace+":{llitems.gen.by_cat:*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(genKeys) > 0 {
				rn.Client.Del(ctx, genKeys...) // evicted
			}
		}
		id := int64(2 + rng.IntN(7))
		sqlRank, repoRank := int64(1+rng.IntN(90)), int64(1+rng.IntN(90))
		if rng.IntN(3) == 0 { // back where it was before the plain-SQL change
			if err := e.db.Model(&llitem{}).Where("id = ?", id).Pluck("rank", &repoRank).Error; err != nil {
				t.Fatal(err)
			}
		}
		locked, done := make(chan struct{}), make(chan error, 1)
		go func() {
			tx := e.db.Begin()
			err := tx.Exec("UPDATE llitems SET rank = ? WHERE id = ?", sqlRank, id).Error
			close(locked)
			if err == nil {
				err = tx.Exec("SELECT pg_sleep(0.03)").Error
			}
			if err == nil {
				err = tx.Commit().Error
			} else {
				tx.Rollback()
			}
			done <- err
		}()
		<-locked
		if err := items.Update(ctx, &llitem{ID: id, CategoryID: 1, Rank: repoRank}); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var want []int64
		if err := e.db.Model(&llitem{}).Where("category_id = 1").Order("rank, id").Pluck("id", &want).Error; err != nil {
			t.Fatal(err)
		}
		lsn := e.currentLSN(t)
		for caughtUp := false; ; {
			caughtUp = inv.Stats().Applied >= lsn
			p.reads++
			if got := listed(); !slices.Equal(got, want) {
				p.bad++
			}
			if caughtUp {
				break
			}
		}
	}
	p.logLines, p.writerLines = slowQ.Stats().Patches, q.Stats().Patches
	return p
}
