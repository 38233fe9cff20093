package cdc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// cqitem is a listed row for the CDC list tests.
type cqitem struct {
	ID         int64 `gorm:"primaryKey"`
	CategoryID int64 `gorm:"not null"`
	Rank       int64 `gorm:"not null"`
	Price      int64 `gorm:"not null"`
}

// Plain SQL seen through the WAL changes the lists of a cached query:
// with REPLICA IDENTITY FULL exactly those of the old and the new row's
// category, patched (cacheaside.PatchFromLog: a cached page stays), and so
// with the default identity (no old row in the log) for a row the
// Invalidator remembers (Options.RecentRows); without it, every list of
// the query is bumped, counted as a fallback. TRUNCATE invalidates every list,
// rows written after it in its transaction included (they queue no list
// work of their own: the TRUNCATE's covers them).
func TestInvalidator_queries(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&cqitem{}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		name, identity string
		recentRows     int
	}{{"full", "full", 0}, {"default", "default", 0}, {"default_remembering_none", "default", -1}} {
		t.Run(v.name, func(t *testing.T) {
			exact := v.identity == "full" || v.recentRows >= 0
			e.exec(t, "TRUNCATE cqitems")
			e.exec(t, "ALTER TABLE cqitems REPLICA IDENTITY "+v.identity)
			items, err := repo.New[cqitem, int64](e.db, e.cache, &repo.Options{
				Name: "cqitems_" + v.name, Policy: cacheaside.Policy{TTL: time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			q, err := repo.NewQuery(items, repo.QueryOf{Name: "by_category", Where: []string{"category_id"}, Order: "rank DESC"})
			if err != nil {
				t.Fatal(err)
			}
			inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot + "_q_" + v.name, RecentRows: v.recentRows})
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Register(items); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inv.Drop(context.Background()) })
			run(t, inv)
			e.exec(t, "INSERT INTO cqitems (id, category_id, rank, price) SELECT g, 3 + (g % 3) * 2, g, 1 FROM generate_series(1, 12) g")
			e.sync(t, inv)
			cats := []int64{3, 5, 7}
			listLoads(t, q, cats...)

			step := func(what, sql string, want map[int64]uint64, fallback bool) {
				t.Helper()
				fb := q.Stats().Fallbacks
				e.exec(t, sql)
				e.sync(t, inv)
				if got := listLoads(t, q, cats...); !mapsEqual(got, want) {
					t.Errorf("%s: loads per list = %v, want %v", what, got, want)
				}
				if d := q.Stats().Fallbacks - fb; (d > 0) != fallback {
					t.Errorf("%s: %d fallbacks, want any: %v", what, d, fallback)
				}
				for _, c := range cats {
					var want []int64
					if err := e.db.Model(&cqitem{}).Where("category_id = ?", c).Order("rank DESC, id").Pluck("id", &want).Error; err != nil {
						t.Fatal(err)
					}
					rows, _, err := q.List(ctx, repo.Page{Size: 100}, c)
					if err != nil {
						t.Fatal(err)
					}
					var got []int64
					for _, r := range rows {
						got = append(got, r.ID)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s: list %d = %v, want %v", what, c, got, want)
					}
				}
			}
			all := map[int64]uint64{3: 2, 5: 2, 7: 2}
			pick := func(rows map[int64]uint64) map[int64]uint64 {
				if exact {
					return rows
				}
				return all
			}
			// A list patched from the log keeps its page; its count
			// reloads.
			step("INSERT", "INSERT INTO cqitems VALUES (100, 3, 50, 1)",
				map[int64]uint64{3: 1, 5: 0, 7: 0}, false)
			step("UPDATE outside", "UPDATE cqitems SET price = 9 WHERE id = 100",
				pick(map[int64]uint64{3: 0, 5: 0, 7: 0}), !exact)
			step("UPDATE move 3 -> 7", "UPDATE cqitems SET category_id = 7 WHERE id = 100",
				pick(map[int64]uint64{3: 1, 5: 0, 7: 1}), !exact)
			step("DELETE", "DELETE FROM cqitems WHERE id = 100",
				pick(map[int64]uint64{3: 0, 5: 0, 7: 1}), !exact)
			step("TRUNCATE", "TRUNCATE cqitems", all, true)
			step("TRUNCATE and INSERT", "BEGIN; INSERT INTO cqitems VALUES (300, 5, 5, 1); TRUNCATE cqitems;"+
				" INSERT INTO cqitems VALUES (200, 5, 10, 1), (201, 3, 20, 1); UPDATE cqitems SET category_id = 7 WHERE id = 201; COMMIT",
				all, true)
		})
	}
}

// listLoads reads lists cats (one page and the count each) and returns
// how many of them were loaded from the database.
func listLoads(t *testing.T, q *repo.Query[cqitem, int64], cats ...int64) map[int64]uint64 {
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

func mapsEqual(a, b map[int64]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
