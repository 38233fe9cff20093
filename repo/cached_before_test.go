package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
)

// A write of a row whose repository has a unique key reads the row's
// unique columns before its statement. When the row is cached it reads
// them there: Update, Delete and Put of a cached row run one statement,
// with no SELECT, and the old slug's mapping is still dropped. An uncached
// row (and, with the read from the cache off, every row) costs a SELECT
// first.
func TestCachedBefore_noSelect(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("cachedOff=%v", off), func(t *testing.T) {
			if off {
				testswitch.CachedBeforeOff.Store(true)
				defer testswitch.CachedBeforeOff.Store(false)
			}
			e := newEnv(t)
			r := e.products(t, repo.Options{})
			ctx := context.Background()
			for _, p := range newProducts(1, 3) {
				if err := r.Create(ctx, &p); err != nil {
					t.Fatal(err)
				}
			}
			selects := func(name string, write func() error, want int) {
				t.Helper()
				e.sql.Reset()
				if err := write(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if n := e.sql.Count("SELECT"); n != want {
					t.Fatalf("%s: %d SELECTs, want %d: %q", name, n, want, e.sql.All())
				}
			}
			cachedSelects := 0
			if off {
				cachedSelects = 1
			}
			selects("Update uncached", func() error { return r.Update(ctx, &product{ID: "p1", Slug: "s1b", Name: "n", Price: 1}) }, 1)
			for _, id := range []string{"p1", "p2", "p3"} {
				if _, err := r.Get(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.GetBy(ctx, "slug", "s1b"); err != nil { // the mapping cached: the Update must drop it
				t.Fatal(err)
			}
			selects("Update", func() error { return r.Update(ctx, &product{ID: "p1", Slug: "s1c", Name: "n", Price: 2}) }, cachedSelects)
			if _, err := r.GetBy(ctx, "slug", "s1b"); !errors.Is(err, repo.ErrNotFound) {
				t.Fatalf("GetBy(old slug) = %v, want ErrNotFound", err)
			}
			selects("Put", func() error { return r.Put(ctx, &product{ID: "p2", Slug: "s2b", Name: "n", Price: 2}) }, cachedSelects)
			selects("Delete", func() error { return r.Delete(ctx, "p3") }, cachedSelects)
			if inserted, err := r.InsertIfAbsent(ctx, &product{ID: "p9", Slug: "s3", Name: "n"}); err != nil || !inserted {
				t.Fatalf("InsertIfAbsent(the deleted row's slug) = %v, %v; want true", inserted, err)
			}
		})
	}
}

// A cached row older than the table (here a plain-SQL change of its
// slug, which nothing invalidated) does not make a write drop the wrong
// mapping: the statement is guarded by the cached slug, matches no row,
// and the write runs again in a transaction that reads the row locked,
// so the slug the row really had is dropped and InsertIfAbsent of it
// inserts. With the guard of the cached values off the write drops the
// cached slug's mapping instead, and InsertIfAbsent answers "duplicate"
// for a slug no row has.
func TestCachedBefore_staleCacheGuarded(t *testing.T) {
	if dup := playStaleCachedSlug(t); dup {
		t.Fatal("InsertIfAbsent of a free slug answered duplicate: the write dropped the cached slug's mapping, not the row's")
	}
}

// The same play with the rule off fails: the test can see it.
// (Not parallel: the switch is process-wide.)
func TestCachedBefore_staleCacheFailsUnguarded(t *testing.T) {
	testswitch.CachedBeforeUnguarded.Store(true)
	defer testswitch.CachedBeforeUnguarded.Store(false)
	if !playStaleCachedSlug(t) {
		t.Fatal("InsertIfAbsent inserted with the cached values unguarded: the test proves nothing")
	}
}

// playStaleCachedSlug caches p1 (slug s1), moves it to slug old by plain
// SQL, caches old's mapping, updates p1 to slug new through the
// repository, and reports whether InsertIfAbsent of a row with slug old
// then answered duplicate.
func playStaleCachedSlug(t *testing.T) (duplicate bool) {
	e := newEnv(t)
	r := e.products(t, repo.Options{})
	ctx := context.Background()
	if err := r.Create(ctx, &product{ID: "p1", Slug: "s1", Name: "n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Get(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Exec("UPDATE products SET slug = 'old' WHERE id = 'p1'").Error; err != nil {
		t.Fatal(err)
	}
	// InsertIfAbsent caches old's mapping (to p1) as it answers: GetBy
	// would check it against p1's cached row and drop it.
	if inserted, err := r.InsertIfAbsent(ctx, &product{ID: "p2", Slug: "old", Name: "n"}); err != nil || inserted {
		t.Fatalf("InsertIfAbsent(old) = %v, %v; want false: p1 has it", inserted, err)
	}
	if err := r.Update(ctx, &product{ID: "p1", Slug: "new", Name: "n"}); err != nil {
		t.Fatal(err)
	}
	inserted, err := r.InsertIfAbsent(ctx, &product{ID: "p2", Slug: "old", Name: "n"})
	if err != nil {
		t.Fatal(err)
	}
	return !inserted
}

// TestCachedBefore_history: three processes (one writing through) write
// the slugs of 3 rows (Update, Put, Modify and UpdateColumns, each row's
// slugs from a pool of its own, so that no two rows collide) while a reader in each fills the
// rows' cache and the slugs' mappings (Get, GetBy); upkeeps land out of
// commit order, so a write often reads a row's slug from a cached value that
// another process's committed write has not invalidated yet. After each
// round, with every write returned, InsertIfAbsent of each slug in every
// process must answer as the table does: duplicate exactly when a row
// has the slug (a row it inserts is deleted again).
func TestCachedBefore_history(t *testing.T) {
	if wrong, asked := playCachedBeforeHistory(t, 30); wrong > 0 {
		t.Fatalf("%d of %d InsertIfAbsent answers differ from the table", wrong, asked)
	}
}

// With the cached values unguarded the rounds give wrong answers.
// (Not parallel: the switch and the upkeep delay are process-wide.)
func TestCachedBefore_historyFailsUnguarded(t *testing.T) {
	testswitch.CachedBeforeUnguarded.Store(true)
	defer testswitch.CachedBeforeUnguarded.Store(false)
	for attempt := range 8 {
		if wrong, asked := playCachedBeforeHistory(t, 30); wrong > 0 {
			t.Logf("play %d: %d of %d answers wrong", attempt, wrong, asked)
			return
		}
	}
	t.Fatal("8 plays and no wrong answer with the cached values unguarded: the test proves nothing")
}

// playCachedBeforeHistory plays rounds rounds and returns the
// InsertIfAbsent answers that differed from the table, and how many it
// asked.
func playCachedBeforeHistory(t *testing.T, rounds int) (wrong, asked int) {
	e := newEnv(t)
	ctx := context.Background()
	rs := []*repo.Repository[product, string]{e.products(t, repo.Options{})}
	for i := range 2 { // the third process writes its rows through: its cache holds what it wrote
		pe := newEnvOn(t, e.db, e.rdb, e.ns)
		rs = append(rs, pe.products(t, repo.Options{WriteThrough: i == 1}))
	}
	const rows, slugs = 3, 4
	slug := func(row, k int) string { return fmt.Sprintf("r%d-%d", row, k) }
	id := func(row int) string { return fmt.Sprintf("p%d", row) }
	for row := range rows {
		if err := rs[0].Create(ctx, &product{ID: id(row), Slug: slug(row, 0), Name: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	repo.SetBeforeUpkeep(t, func() { // upkeeps out of commit order
		time.Sleep(time.Duration(rand.IntN(8)) * 250 * time.Microsecond)
	})
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for w := range 6 {
			wg.Go(func() {
				r, row := rs[w%3], rand.IntN(rows)
				s := slug(row, rand.IntN(slugs))
				var err error
				switch rand.IntN(4) {
				case 0:
					err = r.Update(ctx, &product{ID: id(row), Slug: s, Name: "n"})
				case 1:
					err = r.Put(ctx, &product{ID: id(row), Slug: s, Name: "n"})
				case 2:
					_, err = r.Modify(ctx, id(row), map[string]any{"slug": s})
				default:
					err = r.UpdateColumns(ctx, &product{ID: id(row), Slug: s}, "slug")
				}
				if err != nil {
					errs <- fmt.Errorf("round %d: %w", round, err)
				}
			})
		}
		// Readers fill the rows and the mappings while the writes run.
		done := make(chan struct{})
		var readers sync.WaitGroup
		for p := range rs {
			readers.Go(func() {
				r := rs[p]
				for {
					select {
					case <-done:
						return
					default:
					}
					row := rand.IntN(rows)
					if _, err := r.Get(ctx, id(row)); err != nil {
						errs <- err
						return
					}
					for k := range slugs {
						if _, err := r.GetBy(ctx, "slug", slug(row, k)); err != nil && !errors.Is(err, repo.ErrNotFound) {
							errs <- err
							return
						}
					}
				}
			})
		}
		wg.Wait()
		close(done)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		taken := map[string]bool{}
		var table []product
		if err := e.db.Find(&table).Error; err != nil {
			t.Fatal(err)
		}
		for _, p := range table {
			taken[p.Slug] = true
		}
		for row := range rows {
			for k := range slugs {
				for _, r := range rs {
					asked++
					probe := product{ID: "probe", Slug: slug(row, k), Name: "probe"}
					inserted, err := r.InsertIfAbsent(ctx, &probe)
					if err != nil {
						t.Fatal(err)
					}
					if inserted == taken[probe.Slug] {
						wrong++
						t.Logf("round %d: InsertIfAbsent(%s) = %v, but the table has it: %v", round, probe.Slug, inserted, taken[probe.Slug])
					}
					if inserted {
						if err := r.Delete(ctx, "probe"); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
	return wrong, asked
}
