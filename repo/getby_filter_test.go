package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/repo"
)

// With Options.Filter, GetBy of a slug no row holds answers ErrNotFound
// without a SELECT; writes through the repository keep the slug filter in
// sync (Create, Update to a new slug, Put), and RebuildFilter covers rows
// written around it.
func TestGetBy_filter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	products := e.products(t, repo.Options{Filter: e.filterOptions(10_000)})
	if f := products.FilterBy("slug"); f == nil || products.FilterBy("Slug") != f || products.FilterBy("name") != nil {
		t.Fatalf("FilterBy: slug %v, Slug %v, name %v; want the slug filter twice, then nil", f, products.FilterBy("Slug"), products.FilterBy("name"))
	}
	seeded := newProducts(0, 50)
	if err := e.db.Create(&seeded).Error; err != nil {
		t.Fatal(err)
	}
	if err := products.RebuildFilter(ctx); err != nil {
		t.Fatal(err)
	}

	// 500 distinct absent slugs: the filter answers (1% false positives
	// expected, about 5 SELECTs; 25 is a bound that cannot flake and is
	// far below the 500 an unfiltered GetBy runs).
	e.reset()
	for i := range 500 {
		_, err := products.GetBy(ctx, "slug", fmt.Sprintf("absent-%d", i))
		isNotFound(t, err)
	}
	if n := e.sql.Count("SELECT"); n > 25 {
		t.Fatalf("500 GetBy of absent slugs ran %d SELECTs, want at most 25", n)
	}
	// Warmed slugs pass.
	for _, p := range seeded[:5] {
		if got, err := products.GetBy(ctx, "slug", p.Slug); err != nil || got.ID != p.ID {
			t.Fatalf("GetBy(%s) of a warmed row = %+v, %v", p.Slug, got, err)
		}
	}

	// Create: the slug read as absent before is found after.
	p := product{ID: "new", Slug: "fresh", Name: "New", Price: 1}
	_, err := products.GetBy(ctx, "slug", p.Slug)
	isNotFound(t, err)
	if err := products.Create(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if got, err := products.GetBy(ctx, "slug", "fresh"); err != nil || got.ID != "new" {
		t.Fatalf("GetBy after Create = %+v, %v", got, err)
	}
	// Update to a slug never seen: it is added too; the old one is gone.
	p.Slug = "renamed"
	if err := products.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if got, err := products.GetBy(ctx, "slug", "renamed"); err != nil || got.ID != "new" {
		t.Fatalf("GetBy after Update = %+v, %v", got, err)
	}
	_, err = products.GetBy(ctx, "slug", "fresh")
	isNotFound(t, err)
	// Put of a new row and of an existing row's new slug.
	q := product{ID: "put", Slug: "put-1", Name: "Put", Price: 2}
	if err := products.Put(ctx, &q); err != nil {
		t.Fatal(err)
	}
	q.Slug = "put-2"
	if err := products.Put(ctx, &q); err != nil {
		t.Fatal(err)
	}
	if got, err := products.GetBy(ctx, "slug", "put-2"); err != nil || got.ID != "put" {
		t.Fatalf("GetBy after Put = %+v, %v", got, err)
	}

	// A row written around the repository is unknown to the filter until
	// RebuildFilter adds it.
	if err := e.db.Create(&product{ID: "side", Slug: "side-door", Name: "Side", Price: 3}).Error; err != nil {
		t.Fatal(err)
	}
	e.reset()
	_, err = products.GetBy(ctx, "slug", "side-door")
	isNotFound(t, err)
	if n := e.sql.Count("SELECT"); n != 0 {
		t.Fatalf("GetBy of a slug the filter never saw ran %d SELECTs", n)
	}
	if err := products.RebuildFilter(ctx); err != nil {
		t.Fatal(err)
	}
	// Its cached mapping is the filter's answer, which was not cached:
	// the next GetBy loads it.
	if got, err := products.GetBy(ctx, "slug", "side-door"); err != nil || got.ID != "side" {
		t.Fatalf("GetBy after RebuildFilter = %+v, %v", got, err)
	}
}

// Without Options.Filter every absent slug costs a SELECT: the baseline
// the filtered test is measured against.
func TestGetBy_noFilter_selectsEachAbsentSlug(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	products := e.products(t, repo.Options{})
	if products.FilterBy("slug") != nil {
		t.Fatal("FilterBy without Options.Filter is not nil")
	}
	e.reset()
	for i := range 20 {
		_, err := products.GetBy(ctx, "slug", fmt.Sprintf("absent-%d", i))
		isNotFound(t, err)
	}
	if n := e.sql.Count("SELECT"); n != 20 {
		t.Fatalf("20 GetBy of absent slugs ran %d SELECTs, want 20", n)
	}
}
