package repo_test

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// A warm list read costs three Redis round trips (the two generations,
// pipelined; the page; the rows' MGET) and no SQL; a cold one one SELECT
// of the ids and one of the rows.
func TestQuery_cost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r, q := e.qitems(t, e.cache)
	seedItems(t, r, 30, 1)
	ctx := context.Background()
	e.reset()
	if _, _, err := q.List(ctx, repo.Page{Size: 20}, 1); err != nil {
		t.Fatal(err)
	}
	if n := e.sql.Count("SELECT"); n != 2 {
		t.Errorf("cold list read: %d SELECTs, want 2", n)
	}
	e.reset()
	rows, _, err := q.List(ctx, repo.Page{Size: 20}, 1)
	if err != nil || len(rows) != 20 {
		t.Fatalf("List = %d rows, %v", len(rows), err)
	}
	if n, trips := e.sql.Count("SELECT"), e.cmds.roundTrips(); n != 0 || trips != 3 {
		t.Errorf("warm list read: %d SELECTs and %d round trips (%v), want 0 and 3", n, trips, e.cmds.tripLog)
	}
}

// BenchmarkQuery_List reads a warm page of 20 rows of one category: the
// generations, the page, the rows.
func BenchmarkQuery_List(b *testing.B) {
	pg := testcontainers.Postgres(b)
	if err := pg.DB.AutoMigrate(&qitem{}); err != nil {
		b.Fatal(err)
	}
	rn := testcontainers.Redis(b)
	cache := newCacheOn(b, rn.Client, rn.Namespace)
	r, err := repo.New[qitem, int64](pg.DB, cache, nil)
	if err != nil {
		b.Fatal(err)
	}
	q, err := repo.NewQuery(r, byCategory)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range 20 {
		if err := r.Create(ctx, &qitem{CategoryID: 1, CreatedAt: t0, Price: int64(i)}); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, err := q.List(ctx, repo.Page{Size: 20}, 1); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := q.List(ctx, repo.Page{Size: 20}, 1); err != nil {
			b.Fatal(err)
		}
	}
}
