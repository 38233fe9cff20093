package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/repo"
)

// Under writes and reads through the repository, concurrent with the
// inspection, Inspect reports no violation: every disagreement it sees is
// an invalidation in flight, which its second look clears. Without the
// second look the same load shows violations, so the test can fail.
func TestRepository_Inspect_underLoad(t *testing.T) {
	t.Run("second look", func(t *testing.T) {
		rep := inspectUnderLoad(t)
		if rep.Violations() != 0 {
			t.Fatalf("%d violations under load: %v", rep.Violations(), verdicts(rep))
		}
	})
	t.Run("no second look", func(t *testing.T) {
		repo.SetInspectSecondLook(t, false)
		rep := inspectUnderLoad(t)
		if rep.Violations() == 0 {
			t.Fatalf("no violation without the second look: %+v", rep.InspectStats)
		}
	})
}

// inspectUnderLoad inspects users again and again while writers update,
// create and delete hot rows and readers cache them, until the inspections
// have met at least 3 suspects (disagreements at a first look), and
// returns the sum of their reports.
func inspectUnderLoad(t *testing.T) repo.InspectReport {
	e := newEnv(t)
	users := e.users(t, repo.Options{Filter: e.filterOptions(10000)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const hot = 8
	for i := 1; i <= hot; i++ {
		u := sample.User{ID: int64(i), Email: fmt.Sprintf("u%d@example.com", i), Name: "v0"}
		if err := users.Create(ctx, &u); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
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
	work(func(r *rand.Rand, n int) error { // updates of hot rows
		u := sample.User{ID: 1 + r.Int64N(hot), Name: fmt.Sprintf("v%d", n)}
		u.Email = fmt.Sprintf("u%d@example.com", u.ID)
		return users.Update(ctx, &u)
	})
	work(func(r *rand.Rand, n int) error { // a row created, read, deleted
		id := int64(1000 + n%50)
		u := sample.User{ID: id, Email: fmt.Sprintf("c%d@example.com", id), Name: "c"}
		if err := users.Create(ctx, &u); err != nil {
			return err
		}
		if _, err := users.GetBy(ctx, "email", u.Email); err != nil {
			return err
		}
		if _, err := users.Get(ctx, id); err != nil {
			return err
		}
		return users.Delete(ctx, id)
	})
	for range 2 { // readers
		work(func(r *rand.Rand, n int) error {
			id := 1 + r.Int64N(hot)
			if n%3 == 0 {
				id = 1000 + r.Int64N(50)
			}
			if _, err := users.Get(ctx, id); err != nil && !errors.Is(err, repo.ErrNotFound) {
				return err
			}
			_, err := users.GetBy(ctx, "email", fmt.Sprintf("u%d@example.com", 1+r.Int64N(hot)))
			return err
		})
	}

	var sum repo.InspectReport
	for run := 0; sum.Suspects < 3; run++ {
		if run == 200 {
			t.Fatalf("200 inspections met %d suspects: %+v", sum.Suspects, sum.InspectStats)
		}
		rep, err := users.Inspect(ctx, inspectOptions(&testkit.Logs{}))
		if err != nil {
			t.Fatal(err)
		}
		sum.Inspected += rep.Inspected
		sum.Consistent += rep.Consistent
		sum.Suspects += rep.Suspects
		sum.Stale += rep.Stale
		sum.Ghost += rep.Ghost
		sum.FalseNotFound += rep.FalseNotFound
		sum.DivergentMapping += rep.DivergentMapping
		sum.Found = append(sum.Found, rep.Found...)
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	cancel()
	wg.Wait()
	t.Logf("inspected %d, suspects %d, violations %d", sum.Inspected, sum.Suspects, sum.Violations())
	return sum
}
