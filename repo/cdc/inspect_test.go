package cdc_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// The id ranges of inspectUnderCDC's writers: repo updates, repo
// create-and-delete, plain-SQL updates of existing rows, plain-SQL
// inserts, updates and deletes.
const (
	repoUpdated = 1   // ids 1..20
	repoCycled  = 201 // ids 201..230
	sqlUpdated  = 101 // ids 101..120
	sqlCycled   = 301 // ids 301..320
	idsPerRange = 20
)

// inspectGrace is the Grace of the inspections under CDC: the library's
// default, far above the lag the test measures (see inspectUnderCDC).
const inspectGrace = repo.DefaultInspectGrace

// With the Invalidator following the log, Inspect reports no violation
// while writers change rows through the repository and with plain SQL
// (INSERT, UPDATE of the name and of the unique email, DELETE) and readers
// cache rows, absences and email mappings of the users repository (a
// Bloom filter, the unique key email). Every disagreement it meets is an
// invalidation in flight (repo's after-commit work, or CDC's lag), which
// the second look, Grace later, clears. Without the Invalidator, the same
// load makes it report the plain-SQL writes: the test can fail.
func TestInvalidator_inspectUnderLoad(t *testing.T) {
	t.Parallel()
	t.Run("following", func(t *testing.T) {
		t.Parallel()
		rep, maxLag := inspectUnderCDC(t, true)
		t.Logf("inspected %d, suspects %d, violations %d, CDC lag at most %v, Grace %v",
			rep.Inspected, rep.Suspects, rep.Violations(), maxLag, inspectGrace)
		if rep.Violations() != 0 {
			t.Errorf("%d false reports with CDC on: %v", rep.Violations(), found(rep))
		}
		// The premise of Grace: a write is invalidated within 2 × maxLag
		// of its commit (see inspectUnderCDC).
		if 2*maxLag >= inspectGrace {
			t.Errorf("CDC lag %v: 2 × lag is not below Grace %v, the run proves nothing", maxLag, inspectGrace)
		}
		if rep.Inspected < 300 {
			t.Errorf("inspected %d items, want at least 300", rep.Inspected)
		}
	})
	t.Run("not following", func(t *testing.T) {
		t.Parallel()
		rep, _ := inspectUnderCDC(t, false)
		t.Logf("inspected %d, suspects %d, violations %d", rep.Inspected, rep.Suspects, rep.Violations())
		if rep.Violations() == 0 {
			t.Fatalf("no violation with plain-SQL writes not followed: %+v", rep.InspectStats)
		}
	})
}

// inspectUnderCDC runs the load of TestInvalidator_inspectUnderLoad, with
// an Invalidator running when follow, and inspects the users repository
// again and again until the inspections judged at least 300 items in at
// least 3 runs (follow) or found a violation (not follow). It returns the
// sum of the reports and the largest CDC lag measured.
//
// The lag is measured by a probe that, back to back, takes the current
// WAL position and waits (Invalidator.Wait) until it is applied: a
// transaction committed while probe k-1 ran is applied by the end of probe
// k, so no plain-SQL write waits for its invalidation longer than twice
// the largest probe. Grace (5 s) must be above that; the test checks it.
//
// The table logs whole old rows (REPLICA IDENTITY FULL): with the default
// identity a plain-SQL DELETE or UPDATE of the email does not carry the
// old email, so the Invalidator cannot drop its mapping (repo/cdc's
// documented limit), and the inspector rightly reports that mapping as
// divergent until GetBy, which checks the row it points to, drops it.
func inspectUnderCDC(t *testing.T, follow bool) (repo.InspectReport, time.Duration) {
	e := redisEnv(t)
	e.exec(t, "ALTER TABLE users REPLICA IDENTITY FULL")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var inv *cdc.Invalidator
	if follow {
		inv = e.invalidator(t, cdc.Options{})
		run(t, inv)
		e.sync(t, inv)
	}
	users := e.users
	email := func(id int64, k int) string { return fmt.Sprintf("u%d.%d@example.com", id, k) }
	for _, base := range []int64{repoUpdated, sqlUpdated} {
		for id := base; id < base+idsPerRange; id++ {
			if err := users.Create(ctx, &sample.User{ID: id, Email: email(id, 0), Name: "v0"}); err != nil {
				t.Fatal(err)
			}
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	work := func(f func(r *rand.Rand, n int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for n := 0; ctx.Err() == nil; n++ {
				if err := f(r, n); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	pick := func(r *rand.Rand, base int64) int64 { return base + r.Int64N(idsPerRange) }
	work(func(r *rand.Rand, n int) error { // repo: updates of the name and the email
		id := pick(r, repoUpdated)
		return users.Update(ctx, &sample.User{ID: id, Email: email(id, r.IntN(3)), Name: fmt.Sprintf("r%d", n)})
	})
	work(func(r *rand.Rand, n int) error { // repo: a row created, read, deleted
		id := repoCycled + int64(n%30)
		if err := users.Create(ctx, &sample.User{ID: id, Email: email(id, 0), Name: "c"}); err != nil {
			return err
		}
		if _, err := users.Get(ctx, id); err != nil {
			return err
		}
		return users.Delete(ctx, id)
	})
	var sqlWrites atomic.Int64
	work(func(r *rand.Rand, n int) error { // plain SQL
		var err error
		switch r.IntN(5) {
		case 0:
			id := pick(r, sqlUpdated)
			err = e.db.Exec("UPDATE users SET name = ?, updated_at = now() WHERE id = ?", fmt.Sprintf("s%d", n), id).Error
		case 1:
			id := pick(r, sqlUpdated)
			err = e.db.Exec("UPDATE users SET email = ?, name = ?, updated_at = now() WHERE id = ?",
				email(id, r.IntN(3)), fmt.Sprintf("s%d", n), id).Error
		case 2:
			id := pick(r, sqlCycled)
			err = e.db.Exec("INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?, ?, ?, now(), now()) ON CONFLICT DO NOTHING",
				id, email(id, r.IntN(3)), fmt.Sprintf("s%d", n)).Error
		case 3:
			id := pick(r, sqlCycled)
			err = e.db.Exec("UPDATE users SET name = ?, updated_at = now() WHERE id = ?", fmt.Sprintf("s%d", n), id).Error
		case 4:
			err = e.db.Exec("DELETE FROM users WHERE id = ?", pick(r, sqlCycled)).Error
		}
		if err == nil {
			sqlWrites.Add(1)
		}
		return err
	})
	bases := []int64{repoUpdated, repoCycled, sqlUpdated, sqlCycled}
	for range 2 { // readers: rows and absences by id, mappings by email
		work(func(r *rand.Rand, n int) error {
			id := pick(r, bases[r.IntN(len(bases))])
			if _, err := users.Get(ctx, id); err != nil && !errors.Is(err, repo.ErrNotFound) {
				return err
			}
			if _, err := users.GetBy(ctx, "email", email(id, r.IntN(3))); err != nil && !errors.Is(err, repo.ErrNotFound) {
				return err
			}
			return nil
		})
	}
	var maxLag atomic.Int64
	if follow {
		wg.Add(1)
		go func() { // the lag probe
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				lsn, err := inv.Position(ctx)
				if err == nil {
					err = inv.Wait(ctx, lsn)
				}
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if lag := int64(time.Since(start)); lag > maxLag.Load() {
					maxLag.Store(lag)
				}
			}
		}()
	}

	var sum repo.InspectReport
	for run := 0; ; run++ {
		if run == 50 {
			t.Fatalf("50 inspections: %+v", sum.InspectStats)
		}
		rep, err := users.Inspect(ctx, repo.InspectOptions{
			Rate: 2000, Grace: inspectGrace, SampleSize: 20, For: 2 * time.Second,
			Logger: slog.New(slog.DiscardHandler),
		})
		if err != nil {
			t.Fatal(err)
		}
		add(&sum, rep)
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		if follow && run >= 2 && sum.Inspected >= 300 || !follow && sum.Violations() > 0 {
			break
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d plain-SQL writes", sqlWrites.Load())
	return sum, time.Duration(maxLag.Load())
}

// add adds rep's counts and violations to sum.
func add(sum *repo.InspectReport, rep repo.InspectReport) {
	sum.Inspected += rep.Inspected
	sum.Consistent += rep.Consistent
	sum.Suspects += rep.Suspects
	sum.Skipped += rep.Skipped
	sum.Stale += rep.Stale
	sum.Ghost += rep.Ghost
	sum.FalseNotFound += rep.FalseNotFound
	sum.DivergentMapping += rep.DivergentMapping
	sum.Found = append(sum.Found, rep.Found...)
}

// found lists a report's violations as "kind entity id cached/stored".
func found(rep repo.InspectReport) []string {
	var out []string
	for _, v := range rep.Found {
		out = append(out, fmt.Sprintf("%s %s %s cached %q stored %q", v.Kind, v.Entity, v.ID, v.Cached, v.Stored))
	}
	return out
}
