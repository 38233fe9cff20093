package repo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// qitem is a catalogue row for the query tests: listed by category,
// newest first.
type qitem struct {
	ID         int64     `gorm:"primaryKey"`
	CategoryID int64     `gorm:"not null;index"`
	CreatedAt  time.Time `gorm:"not null"`
	Price      int64     `gorm:"not null"`
}

var byCategory = repo.QueryOf{Name: "by_category", Where: []string{"category_id"}, Order: "created_at DESC, id"}

// qitems migrates qitem's table and returns its repository on cache with
// the by_category query.
func (e *env) qitems(t *testing.T, cache *cacheaside.Cache) (*repo.Repository[qitem, int64], *repo.Query[qitem, int64]) {
	t.Helper()
	return e.qitemsWith(t, cache, repo.Options{})
}

// qitemsWith is qitems with the repository's options o (its ownership
// shared).
func (e *env) qitemsWith(t *testing.T, cache *cacheaside.Cache, o repo.Options) (*repo.Repository[qitem, int64], *repo.Query[qitem, int64]) {
	t.Helper()
	if err := e.db.AutoMigrate(&qitem{}); err != nil {
		t.Fatal(err)
	}
	o.Ownership = repo.OwnershipShared
	r, err := repo.New[qitem, int64](e.db, cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	q, err := repo.NewQuery(r, repo.QueryOf{Name: byCategory.Name, Where: byCategory.Where, Order: byCategory.Order,
		Policy: cacheaside.Policy{Strategy: cacheaside.Mutex}})
	if err != nil {
		t.Fatal(err)
	}
	return r, q
}

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// seedItems creates n items per category in cats, ids from 1.
func seedItems(t *testing.T, r *repo.Repository[qitem, int64], n int, cats ...int64) []qitem {
	t.Helper()
	var out []qitem
	id := int64(1)
	for _, c := range cats {
		for i := range n {
			it := qitem{ID: id, CategoryID: c, CreatedAt: t0.Add(time.Duration(i/2) * time.Minute), Price: 100}
			if err := r.Create(context.Background(), &it); err != nil {
				t.Fatal(err)
			}
			out = append(out, it)
			id++
		}
	}
	return out
}

// ids returns the ids of rows, in order.
func ids(rows []qitem) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// listIDs reads list cat whole, page by page of size.
func listIDs(t *testing.T, q *repo.Query[qitem, int64], cat int64, size int) []int64 {
	t.Helper()
	var ids []int64
	cursor := ""
	for {
		rows, next, err := q.List(context.Background(), repo.Page{Size: size, After: cursor}, cat)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			ids = append(ids, r.ID)
		}
		if next == "" {
			return ids
		}
		cursor = next
	}
}

// sqlIDs reads list cat from the database.
func sqlIDs(t *testing.T, e *env, cat int64) []int64 {
	t.Helper()
	var ids []int64
	if err := e.db.Model(&qitem{}).Where("category_id = ?", cat).Order("created_at DESC, id").Pluck("id", &ids).Error; err != nil {
		t.Fatal(err)
	}
	return ids
}

// loads reads lists cats (one page and the count each) and returns how
// many of them were loaded from the database.
func loads(t *testing.T, q *repo.Query[qitem, int64], cats ...int64) map[int64]uint64 {
	t.Helper()
	out := map[int64]uint64{}
	for _, c := range cats {
		before := q.Stats().Loads
		if _, _, err := q.List(context.Background(), repo.Page{Size: 10}, c); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Count(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		out[c] = q.Stats().Loads - before
	}
	return out
}

func TestQuery_pagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, q := e.qitems(t, e.cache)
	seedItems(t, r, 23, 1, 2)
	want := sqlIDs(t, e, 1)
	if len(want) != 23 {
		t.Fatalf("seeded %d rows", len(want))
	}
	for _, size := range []int{1, 4, 23, 100} {
		for round := range 2 { // a miss, then every page a hit
			if got := listIDs(t, q, 1, size); !slices.Equal(got, want) {
				t.Fatalf("size %d round %d: %v, want %v", size, round, got, want)
			}
		}
	}
	e.reset()
	if got := listIDs(t, q, 1, 4); !slices.Equal(got, want) || e.sql.Count("SELECT") != 0 {
		t.Fatalf("warm walk: %v, %d SELECTs", got, e.sql.Count("SELECT"))
	}
	// Offset pages: the same rows, cached; the cursor of one continues
	// by keyset.
	ctx := context.Background()
	for _, off := range []int{0, 1, 5, 22, 23, 40} {
		for round := range 2 {
			e.reset()
			rows, next, err := q.List(ctx, repo.Page{Size: 4, Offset: off}, 1)
			if err != nil {
				t.Fatal(err)
			}
			wantPage := want[min(off, len(want)):min(off+4, len(want))]
			if got := ids(rows); !slices.Equal(got, wantPage) {
				t.Fatalf("offset %d round %d: %v, want %v", off, round, got, wantPage)
			}
			if round == 1 && e.sql.Count("SELECT") != 0 {
				t.Fatalf("offset %d: %d SELECTs on a warm page", off, e.sql.Count("SELECT"))
			}
			if (next != "") != (off+4 < len(want)) {
				t.Fatalf("offset %d: next cursor %q", off, next)
			}
			if next != "" {
				rows, _, err := q.List(ctx, repo.Page{Size: 4, After: next}, 1)
				if err != nil {
					t.Fatal(err)
				}
				if got, w := ids(rows), want[off+4:min(off+8, len(want))]; !slices.Equal(got, w) {
					t.Fatalf("after offset %d: %v, want %v", off, got, w)
				}
			}
		}
	}
	// A write reaches the offset pages it changes.
	first := want[0]
	if err := r.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	want = sqlIDs(t, e, 1)
	if rows, _, err := q.List(ctx, repo.Page{Size: 4, Offset: 5}, 1); err != nil || !slices.Equal(ids(rows), want[5:9]) {
		t.Fatalf("offset 5 after a delete: %v, %v; want %v", ids(rows), err, want[5:9])
	}
	if n, err := q.Count(context.Background(), 1); err != nil || n != 22 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	if n, err := q.Count(context.Background(), int32(99)); err != nil || n != 0 {
		t.Fatalf("Count(99) = %d, %v", n, err)
	}
}

// A category move invalidates the lists of both categories and no third;
// a change outside the filter and order columns invalidates none; a
// rolled-back transaction none.
func TestQuery_invalidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, q := e.qitems(t, e.cache)
	items := seedItems(t, r, 5, 3, 7, 9)
	ctx := context.Background()
	loads(t, q, 3, 7, 9)
	if got := loads(t, q, 3, 7, 9); got[3]+got[7]+got[9] != 0 {
		t.Fatalf("warm lists loaded: %v", got)
	}

	it := items[0] // in 3
	it.CategoryID = 7
	bumps := q.Stats().Invalidations
	if err := r.Update(ctx, &it); err != nil {
		t.Fatal(err)
	}
	if d := q.Stats().Invalidations - bumps; d != 2 {
		t.Fatalf("a move bumped %d generations, want 2", d)
	}
	if got := loads(t, q, 3, 7, 9); got[3] != 1 || got[7] != 1 || got[9] != 0 {
		t.Fatalf("after a move 3 -> 7, loads per list = %v, want 1, 1, 0 (the counts; the pages are patched)", got)
	}
	if got, want := listIDs(t, q, 7, 3), sqlIDs(t, e, 7); !slices.Equal(got, want) {
		t.Fatalf("list 7 = %v, want %v", got, want)
	}

	bumps = q.Stats().Invalidations
	if _, err := r.Modify(ctx, items[6].ID, map[string]any{"price": 5}); err != nil {
		t.Fatal(err)
	}
	if d := q.Stats().Invalidations - bumps; d != 0 {
		t.Fatalf("a price change bumped %d generations", d)
	}
	if got := loads(t, q, 3, 7, 9); got[3]+got[7]+got[9] != 0 {
		t.Fatalf("after a price change, loads = %v", got)
	}

	boom := errors.New("boom")
	err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		v := items[11] // in 9
		v.CategoryID = 3
		if err := r.WithTx(tx).Update(ctx, &v); err != nil {
			return err
		}
		if err := r.WithTx(tx).Delete(ctx, items[12].ID); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Transaction = %v", err)
	}
	if d := q.Stats().Invalidations - bumps; d != 0 {
		t.Fatalf("a rolled-back transaction bumped %d generations", d)
	}
	if got := loads(t, q, 3, 7, 9); got[3]+got[7]+got[9] != 0 {
		t.Fatalf("after a rollback, loads = %v", got)
	}

	// Committed: the same moves land.
	err = repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		v := items[11]
		v.CategoryID = 3
		if err := r.WithTx(tx).Update(ctx, &v); err != nil {
			return err
		}
		return r.WithTx(tx).Delete(ctx, items[12].ID)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Patched at the COMMIT (the pages stay; the counts reload), the two
	// lines of list 9 in one call.
	if got := loads(t, q, 3, 7, 9); got[3] != 1 || got[7] != 0 || got[9] != 1 {
		t.Fatalf("after a committed move 9 -> 3 and a delete in 9, loads = %v", got)
	}
	for _, c := range []int64{3, 7, 9} {
		if got, want := listIDs(t, q, c, 2), sqlIDs(t, e, c); !slices.Equal(got, want) {
			t.Fatalf("list %d = %v, want %v", c, got, want)
		}
	}
	// A change of an order column reorders its list only.
	v := items[14]
	v.CreatedAt = t0.Add(time.Hour)
	if err := r.Update(ctx, &v); err != nil {
		t.Fatal(err)
	}
	if got := loads(t, q, 3, 7, 9); got[3] != 0 || got[7] != 0 || got[9] != 1 {
		t.Fatalf("after a reorder in 9, loads = %v, want 0, 0, 1 (the count; the page is patched)", got)
	}
	if got, want := listIDs(t, q, 9, 10), sqlIDs(t, e, 9); !slices.Equal(got, want) || got[0] != v.ID {
		t.Fatalf("list 9 = %v, want %v", got, want)
	}

	// The Many forms patch too: one read of each list's generation before
	// the statements, the lines of one list in one call at the COMMIT.
	st := q.Stats()
	more := []qitem{{ID: 100, CategoryID: 3, CreatedAt: t0.Add(2 * time.Hour), Price: 1},
		{ID: 101, CategoryID: 3, CreatedAt: t0.Add(-time.Hour), Price: 1},
		{ID: 102, CategoryID: 7, CreatedAt: t0, Price: 1}}
	if err := r.CreateMany(ctx, more); err != nil {
		t.Fatal(err)
	}
	if got := loads(t, q, 3, 7, 9); got[3] != 1 || got[7] != 1 || got[9] != 0 {
		t.Fatalf("after CreateMany into 3 and 7, loads = %v, want 1, 1, 0 (the counts; the pages are patched)", got)
	}
	more[0].CategoryID = 9                    // a move 3 -> 9
	more[2].CreatedAt = t0.Add(3 * time.Hour) // kept: an upsert keeps created_at
	if err := r.PutMany(ctx, more); err != nil {
		t.Fatal(err)
	}
	if !more[2].CreatedAt.Equal(t0) {
		t.Fatalf("PutMany left created_at %v in the row it returned, the table keeps %v", more[2].CreatedAt, t0)
	}
	if got := loads(t, q, 3, 7, 9); got[3] != 1 || got[7] != 0 || got[9] != 1 {
		t.Fatalf("after PutMany moving 3 -> 9, loads = %v, want 1, 0, 1", got)
	}
	if now := q.Stats(); now.Patches-st.Patches != 5 || now.Invalidations-st.Invalidations != 5 {
		t.Fatalf("the Many forms appended %d lines and bumped %d generations, want 5 lines (2 to 3 and 1 to 7, then 1 to 3 and 1 to 9) and no bump",
			now.Patches-st.Patches, now.Invalidations-st.Invalidations-(now.Patches-st.Patches))
	}
	for _, c := range []int64{3, 7, 9} {
		if got, want := listIDs(t, q, c, 3), sqlIDs(t, e, c); !slices.Equal(got, want) {
			t.Fatalf("list %d = %v, want %v", c, got, want)
		}
	}
}

func TestQuery_badInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, q := e.qitems(t, e.cache)
	seedItems(t, r, 5, 1, 2)
	ctx := context.Background()
	_, next, err := q.List(ctx, repo.Page{Size: 2}, 1)
	if err != nil || next == "" {
		t.Fatalf("List = %q, %v", next, err)
	}
	tampered := []byte(next)
	tampered[len(tampered)/2] ^= 1
	for name, f := range map[string]func() error{
		"no value":        func() error { _, _, err := q.List(ctx, repo.Page{Size: 2}); return err },
		"two values":      func() error { _, _, err := q.List(ctx, repo.Page{Size: 2}, 1, 2); return err },
		"string value":    func() error { _, _, err := q.List(ctx, repo.Page{Size: 2}, "1"); return err },
		"nil value":       func() error { _, _, err := q.List(ctx, repo.Page{Size: 2}, nil); return err },
		"float value":     func() error { _, err := q.Count(ctx, 1.5); return err },
		"overflow":        func() error { _, err := q.Count(ctx, uint64(1<<63)); return err },
		"size 0":          func() error { _, _, err := q.List(ctx, repo.Page{}, 1); return err },
		"size 1e9":        func() error { _, _, err := q.List(ctx, repo.Page{Size: 1e9}, 1); return err },
		"tampered cursor": func() error { _, _, err := q.List(ctx, repo.Page{Size: 2, After: string(tampered)}, 1); return err },
		"cursor of 2":     func() error { _, _, err := q.List(ctx, repo.Page{Size: 2, After: next}, 2); return err },
		"garbage cursor":  func() error { _, _, err := q.List(ctx, repo.Page{Size: 2, After: "!!"}, 1); return err },
		"offset -1":       func() error { _, _, err := q.List(ctx, repo.Page{Size: 2, Offset: -1}, 1); return err },
		"offset 1e9":      func() error { _, _, err := q.List(ctx, repo.Page{Size: 2, Offset: 1e9}, 1); return err },
		"offset + cursor": func() error { _, _, err := q.List(ctx, repo.Page{Size: 2, Offset: 2, After: next}, 1); return err },
		"no column": func() error {
			_, err := repo.NewQuery(r, repo.QueryOf{Name: "x", Where: []string{"colour"}})
			return err
		},
		"bad order": func() error {
			_, err := repo.NewQuery(r, repo.QueryOf{Name: "x", Order: "price UP"})
			return err
		},
		"no name": func() error { _, err := repo.NewQuery(r, repo.QueryOf{Where: []string{"price"}}); return err },
		"blank name": func() error {
			_, err := repo.NewQuery(r, repo.QueryOf{Name: " \t", Where: []string{"price"}})
			return err
		},
		"twice": func() error { _, err := repo.NewQuery(r, byCategory); return err },
	} {
		e.reset()
		if err := f(); !errors.Is(err, repo.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if n := e.cmds.count("set") + e.cmds.count("evalsha") + e.sql.Count("SELECT"); n != 0 {
			t.Errorf("%s: %d Redis writes and SELECTs", name, n)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := q.List(cctx, repo.Page{Size: 2}, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v", err)
	}
}

// On a Redis Cluster the generations and pages of one list live in
// different slots: reads and bumps still work, and a move invalidates
// the two lists.
func TestQuery_cluster(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	rc := testcontainers.RedisCluster(t)
	e := newEnvOn(t, pg.DB, rc.Client, rc.Namespace)
	r, q := e.qitems(t, e.cache)
	items := seedItems(t, r, 6, 3, 7, 9)
	ctx := context.Background()
	loads(t, q, 3, 7, 9)
	if got := loads(t, q, 3, 7, 9); got[3]+got[7]+got[9] != 0 {
		t.Fatalf("warm lists loaded: %v", got)
	}
	it := items[0]
	it.CategoryID = 7
	if err := r.Update(ctx, &it); err != nil {
		t.Fatal(err)
	}
	if got := loads(t, q, 3, 7, 9); got[3] != 1 || got[7] != 1 || got[9] != 0 {
		t.Fatalf("after a move 3 -> 7, loads per list = %v, want 1, 1, 0 (the counts; the pages are patched)", got)
	}
	for _, c := range []int64{3, 7, 9} {
		if got, want := listIDs(t, q, c, 4), sqlIDs(t, e, c); !slices.Equal(got, want) {
			t.Fatalf("list %d = %v, want %v", c, got, want)
		}
	}
}
