package cdc_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// logShy is a bigint column's type that a load reads (sql.Scanner) but
// whose decoding from the log fails: it also implements pgtype's
// TextScanner, which pgx's type map prefers for text values, and refuses
// there. It stands for any value the Invalidator cannot decode.
type logShy int64

func (v *logShy) Scan(src any) error {
	n, ok := src.(int64)
	if !ok {
		return fmt.Errorf("logShy: scan a %T", src)
	}
	*v = logShy(n)
	return nil
}

func (v logShy) Value() (driver.Value, error) { return int64(v), nil }

func (v *logShy) ScanText(pgtype.Text) error { return errors.New("logShy: not from the log") }

// undItem has a unique key and a list filter the log cannot decode.
type undItem struct {
	ID       int64  `gorm:"primaryKey"`
	Code     logShy `gorm:"type:bigint;uniqueIndex"`
	Category logShy `gorm:"type:bigint;not null"`
	Rank     int64  `gorm:"not null"`
}

// undKey has a primary key the log cannot decode.
type undKey struct {
	ID   logShy `gorm:"type:bigint;primaryKey"`
	Name string `gorm:"not null"`
}

// A change with a value the Invalidator cannot decode is not skipped: it
// gets the safe superset of its cache work. Here a unique key's and a list
// filter's values are lost (every mapping of the key dropped and its
// filter distrusted, every list bumped), and in another table the primary
// key (every cached row invalidated, its filter distrusted). Every read
// through the repositories after the Wait equals the database; the
// changes are counted in Stats.Undecoded, none in Skipped.
func TestInvalidator_undecodable(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&undItem{}, &undKey{}); err != nil {
		t.Fatal(err)
	}
	opts := func(name string) *repo.Options {
		return &repo.Options{Name: name, Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour},
			Filter: &bloom.Options{Namespace: e.ns, Capacity: 1000, FalsePositiveRate: 0.001}}
	}
	items, err := repo.New[undItem, int64](e.db, e.cache, opts("und_items"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = items.Close() })
	keys, err := repo.New[undKey, logShy](e.db, e.cache, opts("und_keys"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = keys.Close() })
	for _, r := range []interface{ RebuildFilter(context.Context) error }{items, keys} {
		if err := r.RebuildFilter(ctx); err != nil { // trusted: "absent" answers count
			t.Fatal(err)
		}
	}
	q, err := repo.NewQuery(items, repo.QueryOf{Name: "by_category", Where: []string{"category"}, Order: "rank"})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot})
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Register(items, keys); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inv.Drop(context.Background()) })
	run(t, inv)
	e.sync(t, inv)

	check := func(what string) {
		t.Helper()
		for _, id := range []int64{1, 2} {
			var want []undItem
			if err := e.db.Where("id = ?", id).Find(&want).Error; err != nil {
				t.Fatal(err)
			}
			got, err := items.Get(ctx, id)
			if len(want) == 0 && !errors.Is(err, repo.ErrNotFound) || len(want) == 1 && (err != nil || got != want[0]) {
				t.Errorf("%s: Get(%d) = %+v, %v; want %v", what, id, got, err, want)
			}
		}
		for _, code := range []logShy{77, 78} {
			var want []undItem
			if err := e.db.Where("code = ?", int64(code)).Find(&want).Error; err != nil {
				t.Fatal(err)
			}
			got, err := items.GetBy(ctx, "code", code)
			if len(want) == 0 && !errors.Is(err, repo.ErrNotFound) || len(want) == 1 && (err != nil || got != want[0]) {
				t.Errorf("%s: GetBy(code, %d) = %+v, %v; want %v", what, code, got, err, want)
			}
		}
		for _, c := range []logShy{5, 6} {
			var want []int64
			if err := e.db.Model(&undItem{}).Where("category = ?", int64(c)).Order("rank, id").Pluck("id", &want).Error; err != nil {
				t.Fatal(err)
			}
			rows, _, err := q.List(ctx, repo.Page{Size: 10}, c)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]int64, len(rows))
			for i, r := range rows {
				got[i] = r.ID
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: List(%d) = %v, want %v", what, c, got, want)
			}
		}
		for _, id := range []logShy{7, 8} {
			var want []undKey
			if err := e.db.Where("id = ?", int64(id)).Find(&want).Error; err != nil {
				t.Fatal(err)
			}
			got, err := keys.Get(ctx, id)
			if len(want) == 0 && !errors.Is(err, repo.ErrNotFound) || len(want) == 1 && (err != nil || got != want[0]) {
				t.Errorf("%s: keys.Get(%d) = %+v, %v; want %v", what, id, got, err, want)
			}
		}
	}
	step := func(what string, sqls ...string) {
		t.Helper()
		for _, s := range sqls {
			e.exec(t, s)
		}
		e.sync(t, inv)
		check(what)
	}
	check("empty") // caches the absences
	step("INSERT", "INSERT INTO und_items VALUES (1, 77, 5, 1), (2, NULL, 5, 2)", "INSERT INTO und_keys VALUES (7, 'a'), (8, 'b')")
	step("UPDATE", "UPDATE und_items SET code = 78, category = 6 WHERE id = 1", "UPDATE und_keys SET name = 'c' WHERE id = 8")
	step("UPDATE outside the keys", "UPDATE und_items SET rank = 0 WHERE id = 2", "UPDATE und_keys SET name = 'd' WHERE id = 7")
	step("DELETE", "DELETE FROM und_items WHERE id = 1", "DELETE FROM und_keys WHERE id = 8")
	s := inv.Stats()
	if s.Skipped != 0 || s.Undecoded == 0 || !errors.Is(s.LastError, cdc.ErrUndecoded) {
		t.Errorf("stats: %d skipped, %d undecoded, last error %v; want none skipped, some undecoded (ErrUndecoded)",
			s.Skipped, s.Undecoded, s.LastError)
	}
}
