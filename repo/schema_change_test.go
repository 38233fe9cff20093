package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// TestSchemaChange_addDropColumn runs a migration that adds and drops a
// column while Get, GetMany and GetBy read through the SQL path, on the
// pool whose connections pgx keeps prepared statements on (issue 22): no
// read may fail. A "SELECT *" prepared before the migration failed with
// "cached plan must not change result type" once per connection after
// each ALTER.
func TestSchemaChange_addDropColumn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Absent ids are not cached, so every read of one is a query.
	r := e.users(t, repo.Options{Policy: cacheaside.Policy{NullTTL: cacheaside.Disabled}})
	ids := seedUsers(t, e, 16)
	var stmts []string
	for range 4 {
		stmts = append(stmts,
			"ALTER TABLE users ADD COLUMN nickname text",
			"ALTER TABLE users DROP COLUMN nickname")
	}
	errs := duringMigration(t, e.db, stmts, func(ctx context.Context, g, i int) error {
		if err := readUsers(ctx, r, ids, g, i); err != nil {
			return err
		}
		return readUsersInTx(ctx, e.db, r, ids, g, i)
	})
	for _, err := range errs[:min(len(errs), 5)] {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.Errorf("%d reads failed during the migration, want 0", len(errs))
	}
}

// TestSchemaChange_alterColumnType changes the type of a column the model
// reads, which changes the result type of any statement that selects it:
// a read outside a transaction that meets the stale statement is retried
// once, on the connection whose statement pgx has dropped by then. (In a
// transaction the failed read has aborted it: the caller retries.)
func TestSchemaChange_alterColumnType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	r := e.users(t, repo.Options{Policy: cacheaside.Policy{NullTTL: cacheaside.Disabled}})
	ids := seedUsers(t, e, 4)
	for i, size := range []int{201, 200, 201} {
		// One reader at a time: the pool hands back the connection it
		// just used, where the statements were prepared.
		if err := readUsers(ctx, r, ids, 0, i); err != nil {
			t.Fatalf("before ALTER %d: %v", i, err)
		}
		if err := e.db.Exec(fmt.Sprintf("ALTER TABLE users ALTER COLUMN name TYPE varchar(%d)", size)).Error; err != nil {
			t.Fatal(err)
		}
		if err := readUsers(ctx, r, ids, 0, i); err != nil {
			t.Fatalf("after ALTER %d: %v", i, err)
		}
	}
}

// readUsers is reader g's i-th round outside a transaction: Get, GetMany
// and GetBy of an id and an email absent from the table, which are not
// cached, so queried each time.
func readUsers(ctx context.Context, r *repo.Repository[sample.User, int64], ids []int64, g, i int) error {
	absent := -int64(1 + g*1_000_000 + i)
	if _, err := r.Get(ctx, absent); !errors.Is(err, repo.ErrNotFound) {
		return fmt.Errorf("Get(%d) = %v, want ErrNotFound", absent, err)
	}
	id := ids[(g+i)%len(ids)]
	got, err := r.GetMany(ctx, []int64{id, absent})
	if err != nil {
		return fmt.Errorf("GetMany: %w", err)
	}
	if len(got) != 1 || got[id].ID != id {
		return fmt.Errorf("GetMany(%d, %d) = %v, want only %d", id, absent, got, id)
	}
	email := fmt.Sprintf("absent%d@example.com", absent)
	if _, err := r.GetBy(ctx, "email", email); !errors.Is(err, repo.ErrNotFound) {
		return fmt.Errorf("GetBy(email, %s) = %v, want ErrNotFound", email, err)
	}
	return nil
}

// readUsersInTx is reader g's i-th round in a WithTx view, whose reads go
// to the database (on the pool's connections all the same): Get, GetMany
// and GetBy of rows that exist.
func readUsersInTx(ctx context.Context, db *gorm.DB, r *repo.Repository[sample.User, int64], ids []int64, g, i int) error {
	id := ids[(g+i)%len(ids)]
	return repo.Transaction(ctx, db, func(tx *repo.Tx) error {
		v := r.WithTx(tx)
		u, err := v.Get(ctx, id)
		if err != nil || u.ID != id {
			return fmt.Errorf("tx Get(%d) = %d, %v", id, u.ID, err)
		}
		many, err := v.GetMany(ctx, ids[:3])
		if err != nil || len(many) != 3 {
			return fmt.Errorf("tx GetMany = %d rows, %v; want 3", len(many), err)
		}
		u, err = v.GetBy(ctx, "email", u.Email)
		if err != nil || u.ID != id {
			return fmt.Errorf("tx GetBy(email) = %d, %v; want %d", u.ID, err, id)
		}
		return nil
	})
}

// duringMigration calls read on 4 goroutines, each for at most 1000
// rounds, while it runs stmts on db one after another, each once the
// readers have finished 8 more rounds, and 8 more after the last. It
// returns the readers' errors.
func duringMigration(t *testing.T, db *gorm.DB, stmts []string, read func(ctx context.Context, g, i int) error) []error {
	t.Helper()
	const readers, maxRounds, between = 4, 1000, 8
	ctx := context.Background()
	var (
		mu   sync.Mutex // guards errs
		errs []error
		wg   sync.WaitGroup
	)
	// A reader reports a finished round on progress only when the
	// migrator is waiting for one, so the migrator counts rounds that
	// ended after its last statement.
	progress := make(chan struct{})
	stop := make(chan struct{})
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxRounds {
				select {
				case <-stop:
					return
				default:
				}
				if err := read(ctx, g, i); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("reader %d round %d: %w", g, i, err))
					mu.Unlock()
				}
				select {
				case progress <- struct{}{}:
				default:
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	wait := func() bool {
		for range between {
			select {
			case <-progress:
			case <-done:
				return false
			}
		}
		return true
	}
	for _, s := range stmts {
		if !wait() {
			t.Errorf("the readers finished %d rounds before the migration did", maxRounds)
			break
		}
		if err := db.Exec(s).Error; err != nil {
			t.Errorf("%s: %v", s, err)
			break
		}
	}
	wait()
	close(stop)
	<-done
	return errs
}
