package repo_test

import (
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/repo"
)

// product is a catalogue row: a string primary key and a unique slug, the
// model the GetBy filter and bulk-write tests use (in its own table, so
// that they do not depend on the sample schema).
type product struct {
	ID    string `gorm:"primaryKey;size:64"`
	Slug  string `gorm:"size:200;not null;uniqueIndex"`
	Name  string `gorm:"size:200;not null"`
	Price int64  `gorm:"not null"`
}

// products creates the products table in e's database and returns its
// repository.
func (e *env) products(t *testing.T, o repo.Options) *repo.Repository[product, string] {
	t.Helper()
	if err := e.db.AutoMigrate(&product{}); err != nil {
		t.Fatal(err)
	}
	if o.Filter != nil {
		o.FilterClient = e.rdb
	}
	r, err := repo.New[product, string](e.db, e.cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	warm(t, r, o)
	return r
}

// newProducts returns n products p<from>…, slug s<from>….
func newProducts(from, n int) []product {
	ps := make([]product, n)
	for i := range ps {
		ps[i] = product{ID: fmt.Sprintf("p%d", from+i), Slug: fmt.Sprintf("s%d", from+i), Name: "Product", Price: int64(100 + i)}
	}
	return ps
}
