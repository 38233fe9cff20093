package repo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

func (e *env) userKey(id int64) string { return fmt.Sprintf("%s:{users:%d}", e.ns, id) }

// A rolled-back Create leaves the id unreadable, sends Redis nothing, and
// adds nothing to the filter.
func TestTransaction_rollbackCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{Filter: e.filterOptions(1000)})
	ctx := context.Background()

	// The id the insert will take is cached as absent beforehand: an
	// invalidation would clear it.
	const id = 500
	isNotFound(t, func() error { _, err := users.Get(ctx, id); return err }())
	isNotFound(t, func() error { _, err := users.Get(ctx, id); return err }()) // the filter says no; nothing cached

	boom := errors.New("boom")
	e.reset()
	err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		u := sample.User{ID: id, Email: "r@example.com", Name: "R"}
		if err := users.WithTx(tx).Create(ctx, &u); err != nil {
			return err
		}
		// Inside the transaction, its view reads its own write.
		if got, err := users.WithTx(tx).Get(ctx, id); err != nil || got.Email != u.Email {
			return fmt.Errorf("read own write: %+v, %v", got, err)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Transaction = %v, want boom", err)
	}
	if n := e.cmds.count(""); n != 0 {
		t.Fatalf("a rolled-back transaction sent %d Redis commands: %v", n, e.cmds.cmds)
	}
	if ok, err := users.Filter().MightContain(ctx, "500"); err != nil || ok {
		t.Fatalf("rolled-back id in the filter: %v, %v", ok, err)
	}
	_, err = users.Get(ctx, id)
	isNotFound(t, err)
	var n int64
	e.db.Model(&sample.User{}).Count(&n)
	if n != 0 {
		t.Fatalf("%d rows after rollback", n)
	}

	// A panic rolls back too, and propagates.
	e.reset()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic did not propagate")
			}
		}()
		_ = repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
			u := sample.User{ID: id, Email: "p@example.com", Name: "P"}
			if err := users.WithTx(tx).Create(ctx, &u); err != nil {
				return err
			}
			panic("in fn")
		})
	}()
	if n := e.cmds.count(""); n != 0 {
		t.Fatalf("a panicking transaction sent %d Redis commands", n)
	}
	_, err = users.Get(ctx, id)
	isNotFound(t, err)
}

// A committed Update invalidates the id exactly once, after the commit.
func TestTransaction_commitUpdate_invalidatesOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	u := sample.User{Email: "c@example.com", Name: "Before"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if _, err := users.Get(ctx, u.ID); err != nil { // cache it
		t.Fatal(err)
	}
	key := e.userKey(u.ID)
	e.reset()
	err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		u.Name = "After"
		if err := users.WithTx(tx).Update(ctx, &u); err != nil {
			return err
		}
		if n := e.cmds.touching(key); n != 0 {
			return fmt.Errorf("%d commands touched %s before the commit", n, key)
		}
		// Outside the transaction the old row is still what is cached.
		if got, err := users.Get(ctx, u.ID); err != nil || got.Name != "Before" {
			return fmt.Errorf("read outside the transaction: %+v, %v", got, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The in-transaction Get above read the key once (a GET); the
	// invalidation after the commit is the only other command on it.
	if n, gets := e.cmds.touching(key), e.cmds.count("get"); n != 2 || gets != 1 {
		t.Fatalf("commands on %s: %d (GETs %d), want the GET and one invalidation: %v", key, n, gets, e.cmds.cmds)
	}
	if got, err := users.Get(ctx, u.ID); err != nil || got.Name != "After" {
		t.Fatalf("Get after commit = %+v, %v", got, err)
	}
}

// A nested transaction's upkeep joins the outer one when it succeeds and
// is dropped with its savepoint when it fails.
func TestTx_Transaction_nested(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	a := sample.User{Email: "a@example.com", Name: "A"}
	b := sample.User{Email: "b@example.com", Name: "B"}
	for _, u := range []*sample.User{&a, &b} {
		if err := users.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, err := users.Get(ctx, u.ID); err != nil {
			t.Fatal(err)
		}
	}
	e.reset()
	err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		err := tx.Transaction(func(inner *repo.Tx) error {
			a.Name = "A2"
			if err := users.WithTx(inner).Update(ctx, &a); err != nil {
				return err
			}
			return errors.New("inner fails")
		})
		if err == nil {
			return errors.New("inner error lost")
		}
		return tx.Transaction(func(inner *repo.Tx) error {
			b.Name = "B2"
			return users.WithTx(inner).Update(ctx, &b)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := e.cmds.touching(e.userKey(a.ID)); n != 0 {
		t.Fatalf("rolled-back savepoint invalidated a: %d commands", n)
	}
	if n := e.cmds.touching(e.userKey(b.ID)); n != 1 {
		t.Fatalf("committed savepoint: %d commands on b, want 1", n)
	}
	if got, _ := users.Get(ctx, a.ID); got.Name != "A" {
		t.Fatalf("a = %+v", got)
	}
	if got, _ := users.Get(ctx, b.ID); got.Name != "B2" {
		t.Fatalf("b = %+v", got)
	}
}

// When Redis is gone after the write, the write stands and the error says
// so.
func TestRepository_Create_redisDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := testcontainersRedisServer(t)
	cache := newCacheOn(t, srv.client, e.ns)
	users, err := repo.New[sample.User, int64](e.db, cache, &repo.Options{AfterCommitErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	byDefault, err := repo.New[sample.User, int64](e.db, cache, &repo.Options{Name: "users2"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv.Stop()
	before := repo.GetAfterCommitStats()
	u := sample.User{Email: "d@example.com", Name: "D"}
	err = users.Create(ctx, &u)
	if !errors.Is(err, repo.ErrAfterCommit) {
		t.Fatalf("Create with Redis down = %v, want ErrAfterCommit", err)
	}
	// By default a committed write returns nil; its upkeep is retried
	// in the background and counted.
	if err := byDefault.Create(ctx, &sample.User{Email: "d2@example.com", Name: "D2"}); err != nil {
		t.Fatalf("Create with Redis down, by default = %v, want nil", err)
	}
	if s := repo.GetAfterCommitStats(); s.Failures < before.Failures+2 || s.Pending == 0 {
		t.Errorf("after-commit stats %+v (before %+v): want 2 more failures and work pending", s, before)
	}
	var n int64
	e.db.Model(&sample.User{}).Where("id = ?", u.ID).Count(&n)
	if n != 1 {
		t.Fatal("the row was not written")
	}
	// Reads fall through to the database.
	if got, err := users.Get(ctx, u.ID); err != nil || got.Email != u.Email {
		t.Fatalf("Get with Redis down = %+v, %v", got, err)
	}
}

// The upkeep of many writes in one transaction is merged: one pipelined
// call per filter and per entity, not one round trip per write.
func TestTransaction_bulkUpkeepIsMerged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{Filter: e.filterOptions(1000)})
	ctx := context.Background()
	const n = 100
	created := make([]sample.User, n)
	// One write first loads the scripts of the commit path: a server that
	// has just started (or is shared) may not have them cached yet, and a
	// NOSCRIPT costs one more round trip that this test does not measure.
	warm := sample.User{Email: "bulk-warm@example.com", Name: "Bulk"}
	if err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error { return users.WithTx(tx).Create(ctx, &warm) }); err != nil {
		t.Fatal(err)
	}
	e.reset()
	err := repo.Transaction(ctx, e.db, func(tx *repo.Tx) error {
		for i := range created {
			created[i] = sample.User{Email: fmt.Sprintf("bulk%d@example.com", i), Name: "Bulk"}
			if err := users.WithTx(tx).Create(ctx, &created[i]); err != nil {
				return err
			}
		}
		if n := e.cmds.roundTrips(); n != 0 {
			return fmt.Errorf("%d Redis round trips before the commit", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The primary-key filter, the email filter: one pipeline each, sent
	// concurrently (400 keys: more than one shared pipeline carries); the
	// entity and the email mapping, two entities of one Cache: one.
	if trips := e.cmds.roundTrips(); trips != 3 {
		t.Fatalf("%d writes cost %d round trips after the commit, want 3: %v", n, trips, e.cmds.tripLog)
	}
	for _, u := range created {
		if ok, err := users.Filter().MightContain(ctx, fmt.Sprint(u.ID)); !ok || err != nil {
			t.Fatalf("created id %d not in the filter: %v", u.ID, err)
		}
		if ok, err := users.FilterBy("email").MightContain(ctx, u.Email); !ok || err != nil {
			t.Fatalf("created email %s not in the filter: %v", u.Email, err)
		}
	}
	got, err := users.GetMany(ctx, []int64{created[0].ID, created[n-1].ID})
	if err != nil || len(got) != 2 {
		t.Fatalf("GetMany after the bulk commit = %v, %v", got, err)
	}
}
