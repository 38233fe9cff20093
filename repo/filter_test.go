package repo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// seedUsers inserts n users straight into the database, in one statement
// (not through the repository, so neither the cache nor the filter hears
// of them), and returns their ids in order.
func seedUsers(t *testing.T, e *env, n int) []int64 {
	t.Helper()
	err := e.db.Exec(`INSERT INTO users (email, name, created_at, updated_at)
		SELECT 'seed' || g || '@example.com', 'Seed', now(), now() FROM generate_series(1, ?) AS g`, n).Error
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := e.db.Model(&sample.User{}).Order("id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("seeded %d users, want %d", len(ids), n)
	}
	return ids
}

// readAll calls Get for every id from 8 goroutines and returns how many
// answered ErrNotFound; any other error fails the test.
func readAll(t *testing.T, users *repo.Repository[sample.User, int64], ids []int64) (notFound int) {
	t.Helper()
	const workers = 8
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nf := 0
			for i := w; i < len(ids); i += workers {
				_, err := users.Get(context.Background(), ids[i])
				switch {
				case errors.Is(err, repo.ErrNotFound):
					nf++
				case err != nil:
					mu.Lock()
					firstErr = cmpErr(firstErr, fmt.Errorf("id %d: %w", ids[i], err))
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			notFound += nf
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	return notFound
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// After WarmFilter over 50,000 users, 50,000 reads of absent ids issue SQL
// for at most 1.5% of them.
func TestWarmFilter_absentReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 50_000
	seedUsers(t, e, n)
	users := e.users(t, repo.Options{Filter: e.filterOptions(n), BatchSize: 5000})
	ctx := context.Background()

	e.reset()
	if err := users.RebuildFilter(ctx); err != nil {
		t.Fatal(err)
	}
	// Keyset pages of 5,000: 10 full pages and the empty one that ends it,
	// for the filter of ids and for the filter of emails.
	if pages := e.sql.Count("SELECT"); pages != 22 {
		t.Errorf("RebuildFilter ran %d SELECTs, want 22", pages)
	}
	// The filters are complete now: WarmFilter has nothing to do.
	e.reset()
	if err := users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.sql.Count(""); n != 0 {
		t.Errorf("WarmFilter of complete filters ran %d statements", n)
	}

	// 50,000 reads of absent ids, in batches of 1,000 (each batch one
	// MGET, one pipelined filter query, and one SELECT … IN for the ids
	// that pass the filter). What counts is how many ids reach the
	// database: the SELECTs' bound parameters.
	const batch = 1000
	e.reset()
	for start := int64(0); start < n; start += batch {
		ids := make([]int64, batch)
		for i := range ids {
			ids[i] = 10_000_000 + start + int64(i)
		}
		got, err := users.GetMany(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Fatalf("GetMany of absent ids returned %d users", len(got))
		}
	}
	loaded := e.sql.Params()
	t.Logf("%d absent reads: %d ids reached SQL (%.2f%%) in %d statements; stats %+v",
		n, loaded, 100*float64(loaded)/n, e.sql.Count(""), users.Stats())
	if limit := n * 15 / 1000; loaded > limit {
		t.Fatalf("%d absent reads sent %d ids to SQL, the limit is %d (1.5%%)", n, loaded, limit)
	}
	if loaded == 0 {
		t.Fatal("no false positive at all in 50,000 reads of a 1% filter: is the filter asked?")
	}
	if st := users.Stats(); st.Filtered != uint64(n-loaded) {
		t.Fatalf("Filtered = %d, want %d", st.Filtered, n-loaded)
	}

	// Single reads go through the filter too: 2,000 more absent ids,
	// one Get each, from 8 goroutines. Each false positive costs one
	// statement; the bound is loose (3%, against ~1% expected) so that
	// the smaller sample cannot flake.
	single := make([]int64, 2000)
	for i := range single {
		single[i] = 20_000_000 + int64(i)
	}
	e.reset()
	if nf := readAll(t, users, single); nf != len(single) {
		t.Fatalf("%d of %d absent ids answered ErrNotFound", nf, len(single))
	}
	if q := e.sql.Count(""); q > len(single)*3/100 {
		t.Fatalf("%d single absent reads ran %d SQL statements", len(single), q)
	}

	// The filter passes every user that exists.
	e.reset()
	present := []int64{1, 2, n / 2, n - 1, n}
	got, err := users.GetMany(ctx, present)
	if err != nil || len(got) != len(present) {
		t.Fatalf("GetMany of existing users = %d users, %v", len(got), err)
	}
}

// RebuildFilter drops deleted ids and keeps every existing one.
func TestRebuildFilter_dropsDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 2000
	ids := seedUsers(t, e, n)
	users := e.users(t, repo.Options{Filter: e.filterOptions(10 * n), BatchSize: 300})
	ctx := context.Background()
	if err := users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	deleted := ids[:n/2]
	if err := e.db.Where("id IN ?", deleted).Delete(&sample.User{}).Error; err != nil {
		t.Fatal(err)
	}
	f := users.Filter()
	key := func(id int64) string { return strconv.FormatInt(id, 10) }
	keysOf := func(ids []int64) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = key(id)
		}
		return out
	}
	before, err := f.MightContainMany(ctx, keysOf(deleted))
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range before {
		if !ok {
			t.Fatalf("warmed id %d not in the filter", deleted[i])
		}
	}
	if err := users.RebuildFilter(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := f.MightContainMany(ctx, keysOf(deleted))
	if err != nil {
		t.Fatal(err)
	}
	passing := 0
	for _, ok := range after {
		if ok {
			passing++
		}
	}
	// The filter is sized for 10x the rows: about 0.1% false positives.
	if passing > len(deleted)/50 {
		t.Fatalf("%d of %d deleted ids still pass after the rebuild", passing, len(deleted))
	}
	kept, err := f.MightContainMany(ctx, keysOf(ids[n/2:]))
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range kept {
		if !ok {
			t.Fatalf("existing id %d dropped by the rebuild", ids[n/2+i])
		}
	}
}

// WarmFilter also fills InsertIfAbsent's filter: listings already in the
// table are "maybe", so they are settled without an INSERT.
func TestWarmFilter_uniqueKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rows := make([]sample.Listing, 50)
	for i := range rows {
		rows[i] = listing(i)
	}
	if err := e.db.Create(&rows).Error; err != nil {
		t.Fatal(err)
	}
	listings := e.listings(t, repo.Options{Filter: e.filterOptions(1000), UniqueKey: []string{"Address", "room"}})
	ctx := context.Background()
	if err := listings.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	e.reset()
	for i := range rows {
		l := listing(i)
		if ok, err := listings.InsertIfAbsent(ctx, &l); ok || err != nil {
			t.Fatalf("listing %d: %v, %v", i, ok, err)
		}
	}
	if ins := e.sql.Count("INSERT"); ins != 0 {
		t.Fatalf("%d INSERTs for listings the warmed filter knows", ins)
	}
	noFilter := e.users(t, repo.Options{})
	if err := noFilter.WarmFilter(ctx); !errors.Is(err, repo.ErrInvalid) {
		t.Fatalf("WarmFilter without a filter: %v", err)
	}
}
