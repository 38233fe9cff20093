package repo_test

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
	"github.com/asidekit/asidekit/internal/sqlstate"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
)

// softMember is a soft-deletable row with two unique columns.
type softMember struct {
	ID        int64  `gorm:"primaryKey;autoIncrement:false"`
	Email     string `gorm:"size:64;not null;uniqueIndex"`
	Handle    string `gorm:"size:64;not null;uniqueIndex"`
	Name      string `gorm:"size:64"`
	DeletedAt gorm.DeletedAt
}

// Every write verb on one row at once, from two processes (each its own
// Cache on one namespace), while readers fill the row's entry and its
// GetBy mappings: Create (which takes a soft-deleted row over), Put,
// Update, UpdateColumns, Modify, Delete, CreateMany and PutMany, the
// unique columns' values drawn from pools that no other row ever holds.
// No write may fail but for its own reason (ErrNotFound of a deleted row;
// a Create's duplicate of a live one, which no database error carries;
// nothing else): PostgreSQL's false
// duplicates and deadlocks of racing writes of one row are the library's
// to absorb. Once the writers stop, every process's Get and GetBy answer
// what the table holds.
func TestWrites_oneRowEveryVerb(t *testing.T) {
	t.Parallel()
	e, procs, failed := playOneRow(t, 120, "create", "put", "update", "update-columns", "modify", "delete", "create-many", "put-many")
	if len(failed) > 0 {
		t.Errorf("writes that failed for no reason of their own: %v", failed)
	}
	ctx := context.Background()
	var table softMember
	live := e.db.First(&table, 1).Error == nil
	for p, r := range procs {
		got, err := r.Get(ctx, 1)
		switch {
		case !live && !errors.Is(err, repo.ErrNotFound):
			t.Errorf("process %d: Get of the deleted row: %+v, %v", p, got, err)
		case live && (err != nil || got.Email != table.Email || got.Handle != table.Handle || got.Name != table.Name):
			t.Errorf("process %d: Get: %+v, %v; the table holds %+v", p, got, err, table)
		}
		for k := range onePool {
			email := fmt.Sprintf("e%d", k)
			got, err := r.GetBy(ctx, "email", email)
			holds := live && table.Email == email
			switch {
			case holds && (err != nil || got.Handle != table.Handle):
				t.Errorf("process %d: GetBy(email %s): %+v, %v; the table holds %+v", p, email, got, err, table)
			case !holds && !errors.Is(err, repo.ErrNotFound):
				t.Errorf("process %d: GetBy(email %s): %+v, %v; no live row holds it (table: %+v, live %v)", p, email, got, err, table, live)
			}
		}
	}
}

// Without the second attempt under the row's lock, such writes fail:
// Creates (over the soft-deleted row) and Puts of the row, its upserts,
// fail as duplicates of values only their own row holds. (Not parallel:
// the switch is process-wide.)
func TestWrites_oneRowEveryVerbFailsUnlocked(t *testing.T) {
	testswitch.PutLockedOff.Store(true)
	defer testswitch.PutLockedOff.Store(false)
	for attempt := range 30 { // found within 2 plays quiet; a busy machine races less
		if _, _, failed := playOneRow(t, 400, "create", "put"); len(failed) > 0 {
			t.Logf("play %d: %v", attempt, failed)
			return
		}
	}
	t.Fatal("30 plays and no write failed with the locked attempt off: the test proves nothing")
}

// playOneRow runs 8 writers of n writes each of row 1 of a new
// softMember table, their verbs drawn from verbs ("create", "put",
// "update", "update-columns", "modify", "delete", "create-many",
// "put-many": the last two write a batch of this one row), from two processes,
// beside readers, and returns the
// environment, the processes' repositories and the writes that failed for
// no reason of their own, counted by verb and SQLSTATE.
func playOneRow(t *testing.T, n int, verbs ...string) (*env, []*repo.Repository[softMember, int64], map[string]int) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.db.AutoMigrate(&softMember{}); err != nil {
		t.Fatal(err)
	}
	var procs []*repo.Repository[softMember, int64]
	for p := range 2 {
		c := e.cache
		if p > 0 {
			c = newEnvOn(t, e.db, e.rdb, e.ns).cache
		}
		r, err := repo.New[softMember, int64](e.db, c, &repo.Options{Name: "softmembers", UniqueKey: []string{"email"},
			Policy: cacheaside.Policy{TTL: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		procs = append(procs, r)
	}
	row := func(rng *rand.Rand) softMember {
		return softMember{ID: 1, Email: fmt.Sprintf("e%d", rng.IntN(onePool)), Handle: fmt.Sprintf("h%d", rng.IntN(onePool)), Name: fmt.Sprint(rng.IntN(1000))}
	}
	first := softMember{ID: 1, Email: "e0", Handle: "h0"}
	if err := procs[0].Create(ctx, &first); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var readers, writers sync.WaitGroup
	for p := range procs {
		readers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = procs[p].Get(ctx, 1)
				_, _ = procs[p].GetBy(ctx, "email", fmt.Sprintf("e%d", rng.IntN(onePool)))
			}
		})
	}
	var mu sync.Mutex
	failed := map[string]int{}
	for w := range 8 {
		writers.Go(func() {
			r, rng := procs[w%2], rand.New(rand.NewPCG(uint64(w), 11))
			for range n {
				v := row(rng)
				var err error
				verb := verbs[rng.IntN(len(verbs))]
				switch verb {
				case "create":
					err = r.Create(ctx, &v)
				case "put":
					err = r.Put(ctx, &v)
				case "update":
					err = r.Update(ctx, &v)
				case "update-columns":
					err = r.UpdateColumns(ctx, &v, "email", "handle")
				case "modify":
					_, err = r.Modify(ctx, 1, map[string]any{"email": v.Email, "handle": v.Handle})
				case "delete":
					err = r.Delete(ctx, 1)
				case "create-many":
					err = r.CreateMany(ctx, []softMember{v})
				case "put-many":
					err = r.PutMany(ctx, []softMember{v})
				}
				state, fromDB := sqlstate.Of(err)
				switch {
				case err == nil, errors.Is(err, repo.ErrNotFound) && verb != "put" && verb != "create":
					continue
				case (verb == "create" || verb == "create-many") && errors.Is(err, gorm.ErrDuplicatedKey) && !fromDB:
					continue // a live row
				}
				t.Logf("%s(%+v): %v", verb, v, err)
				mu.Lock()
				failed[fmt.Sprintf("%s: SQLSTATE %q", verb, state)]++
				mu.Unlock()
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	return e, procs, failed
}

// onePool is how many values of each unique column playOneRow's writes
// draw from.
const onePool = 3
