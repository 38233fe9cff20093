package repo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo"
)

// CreateMany inserts in batches and then clears the cached "not found"
// answers of the new ids and slugs: no read after it sees the absence.
func TestCreateMany_batchesAndDropsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	products := e.products(t, repo.Options{BatchSize: 1000})

	// Absences cached before the write.
	_, err := products.Get(ctx, "p3")
	isNotFound(t, err)
	_, err = products.GetBy(ctx, "slug", "s2042")
	isNotFound(t, err)

	ps := newProducts(0, 2500)
	e.reset()
	if err := products.CreateMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	if n := e.sql.Count("INSERT"); n != 3 {
		t.Fatalf("CreateMany of 2,500 rows ran %d INSERTs, want 3 (batches of 1,000)", n)
	}
	// The invalidations are pipelined: one DEL round trip per entity, not
	// one per row.
	if trips := e.cmds.roundTrips(); trips > 10 {
		t.Fatalf("CreateMany's upkeep took %d Redis round trips", trips)
	}
	if got, err := products.Get(ctx, "p3"); err != nil || got.Slug != "s3" {
		t.Fatalf("Get of a created id cached as absent = %+v, %v", got, err)
	}
	if got, err := products.GetBy(ctx, "slug", "s2042"); err != nil || got.ID != "p2042" {
		t.Fatalf("GetBy of a created slug cached as absent = %+v, %v", got, err)
	}
	var count int64
	if err := e.db.Model(&product{}).Count(&count).Error; err != nil || count != 2500 {
		t.Fatalf("table has %d rows (%v), want 2500", count, err)
	}

	// A duplicate in a later batch fails the call and writes nothing.
	more := newProducts(2500, 1500)
	more[1200].ID = "p7"
	err = products.CreateMany(ctx, more)
	if err == nil || !errors.Is(err, gorm.ErrDuplicatedKey) && !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("CreateMany with an existing id: %v, want a duplicate-key error", err)
	}
	if err := e.db.Model(&product{}).Count(&count).Error; err != nil || count != 2500 {
		t.Fatalf("after a failed CreateMany the table has %d rows (%v), want 2500", count, err)
	}
	// Bad input is refused before anything is written.
	e.reset()
	if err := products.CreateMany(ctx, []product{{ID: "ok", Slug: "ok"}, {Slug: "no-id"}}); !errors.Is(err, repo.ErrInvalidID) {
		t.Fatalf("CreateMany with a missing string id: %v, want ErrInvalidID", err)
	}
	if n := e.sql.Count(""); n != 0 {
		t.Fatalf("a refused CreateMany ran %d statements", n)
	}
}

// CreateMany with filters adds every id and slug: a GetBy or Get of each
// passes, and absent ones still answer without SQL.
func TestCreateMany_addsToFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	products := e.products(t, repo.Options{Filter: e.filterOptions(10_000), BatchSize: 300})
	ps := newProducts(0, 1000)
	if err := products.CreateMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(ps))
	slugs := make([]string, len(ps))
	for i, p := range ps {
		ids[i], slugs[i] = p.ID, p.Slug
	}
	for name, c := range map[string]struct {
		f interface {
			MightContainMany(context.Context, []string) ([]bool, error)
		}
		keys []string
	}{"ids": {products.Filter(), ids}, "slugs": {products.FilterBy("slug"), slugs}} {
		in, err := c.f.MightContainMany(ctx, c.keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, ok := range in {
			if !ok {
				t.Fatalf("%s: %s not in the filter after CreateMany", name, c.keys[i])
			}
		}
	}
	e.reset()
	for _, s := range slugs[:20] {
		if _, err := products.GetBy(ctx, "slug", s); err != nil {
			t.Fatalf("GetBy(%s) after CreateMany: %v", s, err)
		}
	}
	for i := range 200 {
		_, err := products.GetBy(ctx, "slug", fmt.Sprintf("none-%d", i))
		isNotFound(t, err)
	}
	// 20 mappings and 20 rows to load, and at most a few false positives.
	if n := e.sql.Count("SELECT"); n < 40 || n > 50 {
		t.Fatalf("GetBy of 20 created and 200 absent slugs ran %d SELECTs, want 40 to 50", n)
	}
}

// PutMany overwrites cached rows: every read after it sees the new values,
// the old slug is gone and the new one found.
func TestPutMany_noStaleReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	products := e.products(t, repo.Options{BatchSize: 4})
	ps := newProducts(0, 10)
	if err := products.CreateMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	// Cache every row and mapping, and one absence.
	for _, p := range ps {
		if _, err := products.GetBy(ctx, "slug", p.Slug); err != nil {
			t.Fatal(err)
		}
	}
	_, err := products.Get(ctx, "p10")
	isNotFound(t, err)

	upd := newProducts(0, 11) // p10 is new
	for i := range upd {
		upd[i].Price = 9000 + int64(i)
		if i%2 == 0 {
			upd[i].Slug = "moved-" + upd[i].Slug
		}
	}
	e.reset()
	if err := products.PutMany(ctx, upd); err != nil {
		t.Fatal(err)
	}
	// 3 batches: a SELECT of the old slugs and an upsert each.
	if ins, sel := e.sql.Count("INSERT"), e.sql.Count("SELECT"); ins != 3 || sel != 3 {
		t.Fatalf("PutMany of 11 rows in batches of 4 ran %d INSERTs and %d SELECTs, want 3 and 3", ins, sel)
	}
	for i, p := range upd {
		got, err := products.Get(ctx, p.ID)
		if err != nil || got.Price != p.Price || got.Slug != p.Slug {
			t.Fatalf("Get(%s) after PutMany = %+v, %v; want price %d slug %s", p.ID, got, err, p.Price, p.Slug)
		}
		if got, err := products.GetBy(ctx, "slug", p.Slug); err != nil || got.ID != p.ID {
			t.Fatalf("GetBy(%s) after PutMany = %+v, %v", p.Slug, got, err)
		}
		if i%2 == 0 && i < len(ps) {
			_, err := products.GetBy(ctx, "slug", ps[i].Slug)
			isNotFound(t, err)
		}
	}

	// Bad input, refused before anything is written.
	e.reset()
	for name, bad := range map[string][]product{
		"no id":        {{ID: "p1", Slug: "a"}, {Slug: "b"}},
		"duplicate id": {{ID: "p1", Slug: "a"}, {ID: "p1", Slug: "b"}},
	} {
		if err := products.PutMany(ctx, bad); !errors.Is(err, repo.ErrInvalidID) {
			t.Errorf("PutMany with %s: %v, want ErrInvalidID", name, err)
		}
	}
	if n := e.sql.Count(""); n != 0 {
		t.Fatalf("refused PutMany calls ran %d statements", n)
	}
}

// In a caller's transaction the upkeep waits for the commit: a rollback
// leaves the cache exactly as it was (no invalidation: the cached row and
// the cached absence are still served, with no load), a commit clears it.
func TestBulk_inTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	products := e.products(t, repo.Options{})
	if err := products.CreateMany(ctx, newProducts(0, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := products.Get(ctx, "p1"); err != nil { // cached
		t.Fatal(err)
	}
	_, err := products.Get(ctx, "p5") // cached as absent
	isNotFound(t, err)
	before := products.Stats()

	abort := errors.New("abort")
	err = repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		view := products.WithTx(tx)
		changed := newProducts(0, 3)
		changed[1].Price = 1
		if err := view.PutMany(ctx, changed); err != nil {
			return err
		}
		if err := view.CreateMany(ctx, newProducts(3, 5)); err != nil {
			return err
		}
		return abort
	})
	if !errors.Is(err, abort) {
		t.Fatalf("Transaction = %v, want the abort", err)
	}
	got, err := products.Get(ctx, "p1")
	if err != nil || got.Price != 101 {
		t.Fatalf("Get after the rollback = %+v, %v; want the old price 101", got, err)
	}
	_, err = products.Get(ctx, "p5")
	isNotFound(t, err)
	after := products.Stats()
	if after.Loads != before.Loads || after.Hits != before.Hits+1 || after.NullHits != before.NullHits+1 {
		t.Fatalf("after a rollback: %+v, before %+v; want one hit, one null hit and no load (nothing invalidated)", after, before)
	}

	// Committed: the reads outside see the writes at once.
	err = repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		view := products.WithTx(tx)
		changed := newProducts(0, 3)
		changed[1].Price = 1
		if err := view.PutMany(ctx, changed); err != nil {
			return err
		}
		return view.CreateMany(ctx, newProducts(3, 5))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := products.Get(ctx, "p1"); err != nil || got.Price != 1 {
		t.Fatalf("Get after the commit = %+v, %v; want price 1", got, err)
	}
	if got, err := products.Get(ctx, "p5"); err != nil || got.Slug != "s5" {
		t.Fatalf("Get of a row created in the committed transaction = %+v, %v", got, err)
	}
}
