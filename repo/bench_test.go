package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

func benchUsers(b *testing.B, n int) (*repo.Repository[sample.User, int64], []int64) {
	b.Helper()
	pg := testcontainers.Postgres(b)
	if err := sample.Migrate(pg.DB); err != nil {
		b.Fatal(err)
	}
	rn := testcontainers.Redis(b)
	cache := newCacheOn(b, rn.Client, rn.Namespace)
	users, err := repo.New[sample.User, int64](pg.DB, cache, &repo.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]sample.User, n)
	for i := range rows {
		rows[i] = sample.User{Email: fmt.Sprintf("b%d@example.com", i), Name: "Bench"}
	}
	if err := pg.DB.Create(&rows).Error; err != nil {
		b.Fatal(err)
	}
	ids := make([]int64, n)
	for i, u := range rows {
		ids[i] = u.ID
	}
	if _, err := users.GetMany(context.Background(), ids); err != nil { // warm the cache
		b.Fatal(err)
	}
	return users, ids
}

// A cache hit: one GET, one JSON decode.
func BenchmarkRepository_Get_hit(b *testing.B) {
	users, ids := benchUsers(b, 100)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := users.Get(ctx, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
	}
}

// 100 cached rows: one MGET.
func BenchmarkRepository_GetMany_hit100(b *testing.B) {
	users, ids := benchUsers(b, 100)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := users.GetMany(ctx, ids); err != nil {
			b.Fatal(err)
		}
	}
}

// Updates of rows written blindly (no read since the last write: the row
// is not cached), as a batch job writes: the read of the row's unique key
// before the statement (its cached value, missing, then a SELECT), the
// UPDATE, and the upkeep after the COMMIT (the row's and its email
// mapping's invalidation, the filters' repair), each waited for.
// "select" has the read from the cache off (testswitch.CachedBeforeOff):
// the SELECT alone.
func BenchmarkRepository_Update(b *testing.B) {
	benchUpdate(b, false)
}

// A Get then an Update of the row, as a service's read-modify-write: the
// Update reads the row's unique key from the value the Get cached, with
// no SELECT ("select": with a SELECT, the read from the cache off).
func BenchmarkRepository_GetThenUpdate(b *testing.B) {
	benchUpdate(b, true)
}

func benchUpdate(b *testing.B, read bool) {
	for _, off := range []bool{false, true} {
		b.Run(map[bool]string{false: "cached", true: "select"}[off], func(b *testing.B) {
			testswitch.CachedBeforeOff.Store(off)
			defer testswitch.CachedBeforeOff.Store(false)
			users, ids := benchUsers(b, 100)
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				id := ids[i%len(ids)]
				if read {
					if _, err := users.Get(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
				u := sample.User{ID: id, Email: fmt.Sprintf("b%d@example.com", i%len(ids)), Name: fmt.Sprint("Bench", i)}
				if err := users.Update(ctx, &u); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
