package cdc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// A write of a cached row takes the row's unique values from its cached
// value and guards its statement by them (repo, cachedBefore). Here the
// cached values go stale in the ways a CDC service sees: plain-SQL writes
// the Invalidator applies later, rows it stores from the log (LogStores),
// rows stored by a write-through process, and other processes' writes.
// Three processes write the email and handle of 3 members rows (two
// unique keys, each row's values from pools of its own) with Update, Put,
// Modify and UpdateColumns while a fourth writer changes them with plain
// SQL, and a reader in each process fills the rows and both keys'
// mappings. After each round, with every write returned and the log
// applied, every process's InsertIfAbsent of each email, and its GetBy of
// each email and handle, must answer as the table does. (This history
// found Put's false duplicates: see repo's TestPut_concurrentNoFalseDuplicate.
// It has no twin with the guard off: once the log is applied, the
// Invalidator drops the mappings an unguarded write missed, so such a run
// finds nothing; repo's TestCachedBefore_historyFailsUnguarded shows the
// guard's need.)
func TestInvalidator_cachedBeforeHistory(t *testing.T) {
	t.Parallel()
	if wrong, asked := playCDCCachedBefore(t, 30); wrong > 0 {
		t.Fatalf("%d of %d answers differ from the table", wrong, asked)
	}
}

// playCDCCachedBefore plays rounds rounds and returns the answers that
// differed from the table, and how many it checked.
func playCDCCachedBefore(t *testing.T, rounds int) (wrong, asked int) {
	e := redisEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&sample.Member{}); err != nil {
		t.Fatal(err)
	}
	policy := cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour}
	var rs []*repo.Repository[sample.Member, int64]
	for p := range 3 { // process 0 stores rows from the log, process 2 writes its rows through
		c := e.cache
		if p > 0 {
			var err error
			if c, err = cacheaside.New(e.rdb, &cacheaside.Options{Namespace: e.ns}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
		}
		r, err := repo.New[sample.Member, int64](e.db, c, &repo.Options{Name: "members", Policy: policy,
			UniqueKey: []string{"email"}, LogStores: p == 0, WriteThrough: p == 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		rs = append(rs, r)
	}
	inv, err := cdc.New(e.dsn, &cdc.Options{Slot: e.slot})
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Register(rs[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inv.Drop(context.Background()) })
	run(t, inv)

	const rows, pool = 3, 4
	email := func(row, k int) string { return fmt.Sprintf("r%d-%d@example.com", row, k) }
	handle := func(row, k int) string { return fmt.Sprintf("h%d-%d", row, k) }
	for row := range rows {
		if err := rs[0].Create(ctx, &sample.Member{ID: int64(row + 1), Email: email(row, 0), Handle: handle(row, 0), Name: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	e.sync(t, inv)
	for round := range rounds {
		errs := make(chan error, 64)
		var writers sync.WaitGroup
		for w := range 8 {
			writers.Go(func() {
				row := rand.IntN(rows)
				m := sample.Member{ID: int64(row + 1), Email: email(row, rand.IntN(pool)), Handle: handle(row, rand.IntN(pool)), Name: "n"}
				r := rs[w%3]
				var err error
				switch rand.IntN(5) {
				case 0:
					err = r.Update(ctx, &m)
				case 1:
					err = r.Put(ctx, &m)
				case 2:
					_, err = r.Modify(ctx, m.ID, map[string]any{"email": m.Email, "handle": m.Handle})
				case 3:
					err = r.UpdateColumns(ctx, &m, "email", "handle")
				default: // plain SQL: the Invalidator applies it
					err = e.db.Exec("UPDATE members SET email = ?, handle = ? WHERE id = ?", m.Email, m.Handle, m.ID).Error
				}
				if err != nil {
					errs <- fmt.Errorf("round %d: %+v: %w", round, m, err)
				}
			})
		}
		// Readers fill the rows and the mappings while the writes run.
		done := make(chan struct{})
		var readers sync.WaitGroup
		for _, r := range rs {
			readers.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					row := rand.IntN(rows)
					if _, err := r.Get(ctx, int64(row+1)); err != nil {
						errs <- err
						return
					}
					for k := range pool {
						for _, by := range [][2]string{{"email", email(row, k)}, {"handle", handle(row, k)}} {
							if _, err := r.GetBy(ctx, by[0], by[1]); err != nil && !errors.Is(err, repo.ErrNotFound) {
								errs <- err
								return
							}
						}
					}
				}
			})
		}
		writers.Wait()
		close(done)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		e.sync(t, inv) // the plain-SQL writes are promised once applied
		w, a := judgeMembers(t, e.db, rs, round, rows, pool, email, handle)
		wrong, asked = wrong+w, asked+a
	}
	return wrong, asked
}

// judgeMembers asks every process InsertIfAbsent of each email and GetBy
// of each email and handle, and counts the answers that differ from the
// table.
func judgeMembers(t *testing.T, db *gorm.DB, rs []*repo.Repository[sample.Member, int64], round, rows, pool int,
	email, handle func(row, k int) string) (wrong, asked int) {
	t.Helper()
	ctx := context.Background()
	var table []sample.Member
	if err := db.Find(&table).Error; err != nil {
		t.Fatal(err)
	}
	owner := map[string]int64{} // email or handle → the row that has it
	for _, m := range table {
		owner[m.Email], owner[m.Handle] = m.ID, m.ID
	}
	for row := range rows {
		for k := range pool {
			for p, r := range rs {
				for _, by := range [][2]string{{"email", email(row, k)}, {"handle", handle(row, k)}} {
					asked++
					m, err := r.GetBy(ctx, by[0], by[1])
					if err != nil && !errors.Is(err, repo.ErrNotFound) {
						t.Fatal(err)
					}
					if got := map[bool]int64{true: m.ID}[err == nil]; got != owner[by[1]] {
						wrong++
						t.Logf("round %d: process %d: GetBy(%s, %s) = row %d, the table's row %d", round, p, by[0], by[1], got, owner[by[1]])
					}
				}
				asked++
				probe := sample.Member{ID: 1000, Email: email(row, k), Handle: "probe", Name: "probe"}
				inserted, err := r.InsertIfAbsent(ctx, &probe)
				if err != nil {
					t.Fatal(err)
				}
				if taken := owner[probe.Email] != 0; inserted == taken {
					wrong++
					t.Logf("round %d: process %d: InsertIfAbsent(%s) = %v, but the table has it: %v", round, p, probe.Email, inserted, taken)
				}
				if inserted {
					if err := r.Delete(ctx, int64(1000)); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	return wrong, asked
}
