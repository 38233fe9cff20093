package cdc_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// A repository write that completes on top of a plain-SQL move the
// Invalidator has not applied yet (held here right before it): the
// plain-SQL UPDATE moves row 1 from list 1 to list 2, then Modify changes
// the row's note and leaves it where it read it (list 2, its rank), then
// Modify
// moves row 2 from list 1 to list 3 after a plain-SQL UPDATE of its
// rank. The lists must show what the repository writes left: row 1 in
// list 2 alone and row 2 in list 3 alone, before the Invalidator applies
// the plain-SQL changes and after. Without the re-assert
// (testswitch.ListReassertOff) list 2 lacks row 1 until the Invalidator
// catches up; without the row check (ListRowCheckOff) list 1 still shows
// row 1.
func TestInvalidator_listsBehindTheLog(t *testing.T) {
	t.Parallel()
	if bad := listsBehindTheLog(t); len(bad) > 0 {
		t.Fatal(bad)
	}
}

// Not parallel: the switches are the process's.
func TestInvalidator_listsBehindTheLog_failsRuleOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		off  *atomic.Bool
	}{
		{"reassertOff", &testswitch.ListReassertOff},
		{"rowCheckOff", &testswitch.ListRowCheckOff},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.off.Store(true)
			defer tc.off.Store(false)
			bad := listsBehindTheLog(t)
			if len(bad) == 0 {
				t.Fatal("the lists were right with the rule off: the test proves nothing")
			}
			t.Log(bad)
		})
	}
}

// lagItem is the row of listsBehindTheLog.
type lagItem struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false"`
	Cat  int64 `gorm:"not null"`
	Rank int64 `gorm:"not null"`
	Note string
}

// listsBehindTheLog plays the writes and returns what the lists showed
// wrong.
func listsBehindTheLog(t *testing.T) (bad []string) {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	rn := testcontainers.Redis(t)
	e := newEnv(t, rn.Client, rn.Namespace)
	if err := e.db.AutoMigrate(&lagItem{}); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "ALTER TABLE lag_items REPLICA IDENTITY FULL")
	e.exec(t, "INSERT INTO lag_items (id, cat, rank) VALUES (1, 1, 10), (2, 1, 20), (3, 2, 30), (4, 3, 40)")
	items, err := repo.New[lagItem, int64](e.db, e.cache, &repo.Options{Policy: cacheaside.Policy{TTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	q, err := repo.NewQuery(items, repo.QueryOf{Name: "by_cat", Where: []string{"cat"}, Order: "rank"})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot + "_lag"})
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Register(items); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inv.Drop(context.Background()) })
	var hold atomic.Bool
	held, release := make(chan struct{}, 1), make(chan struct{})
	cdc.SetAfterApply(inv, func(cdc.LSN) error {
		if hold.CompareAndSwap(true, false) {
			held <- struct{}{}
			<-release
		}
		return nil
	})
	run(t, inv)
	e.sync(t, inv)

	check := func(when string, want map[int64][]int64) {
		for cat, ids := range want {
			rows, _, err := q.List(ctx, repo.Page{Size: 10}, cat)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]int64, len(rows))
			for i, r := range rows {
				got[i] = r.ID
			}
			if !slices.Equal(got, ids) {
				bad = append(bad, when+": list "+string(rune('0'+cat))+" shows "+fmtIDs(got)+", want "+fmtIDs(ids))
			}
		}
	}
	check("before", map[int64][]int64{1: {1, 2}, 2: {3}, 3: {4}}) // every list cached

	// Hold the Invalidator after it applies a first transaction, so that
	// it applies none of the next ones.
	hold.Store(true)
	e.exec(t, "UPDATE lag_items SET rank = 41 WHERE id = 4")
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the Invalidator applied nothing")
	}
	e.exec(t, "UPDATE lag_items SET cat = 2 WHERE id = 1")
	if _, err := items.Modify(ctx, 1, map[string]any{"note": gorm.Expr("note || 'x'")}); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "UPDATE lag_items SET rank = 21 WHERE id = 2")
	if _, err := items.Modify(ctx, 2, map[string]any{"cat": 3}); err != nil {
		t.Fatal(err)
	}
	want := map[int64][]int64{1: {}, 2: {1, 3}, 3: {2, 4}}
	check("with the Invalidator behind", want)

	close(release)
	e.sync(t, inv)
	check("once it caught up", want)
	return bad
}

// fmtIDs is ids as "[1 2]".
func fmtIDs(ids []int64) string {
	b := []byte{'['}
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, byte('0'+id))
	}
	return string(append(b, ']'))
}
