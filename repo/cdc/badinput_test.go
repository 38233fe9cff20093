package cdc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// code is a model whose int64 id does not fit a table whose key is text.
type code struct {
	ID   int64 `gorm:"primaryKey"`
	Name string
}

func (code) TableName() string { return "codes" }

// noKey is a model of a table that has no primary key in the database
// (the model says it has one).
type noKey struct {
	ID   int64 `gorm:"primaryKey"`
	Name string
}

func (noKey) TableName() string { return "nokey" }

// Bad input is counted, never a crash or a stuck slot: a table without a
// primary key stays out of the publication, a key that does not decode
// into the id type takes the safe path (Undecoded: the table's cached
// rows are invalidated), a relation nobody registered is skipped, and an
// ALTER TABLE while running is followed.
func TestInvalidator_badInput(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	e.exec(t, "CREATE TABLE codes (id text PRIMARY KEY, name text)")
	e.exec(t, "CREATE TABLE nokey (id bigint, name text)")
	e.exec(t, "CREATE TABLE other (id bigint PRIMARY KEY)")
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	if err := e.users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	codes, err := repo.New[code, int64](e.db, e.cache, &repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nokeys, err := repo.New[noKey, int64](e.db, e.cache, &repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	inv := e.invalidator(t, cdc.Options{})
	if err := inv.Register(codes, nokeys); err != nil {
		t.Fatal(err)
	}
	if err := inv.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	if s := inv.Stats(); s.BadTables != 1 || !errors.Is(s.LastError, cdc.ErrBadTable) {
		t.Fatalf("stats = %+v, want the table without a key counted", s)
	}
	// Updates of the table without a key still work: it was not published.
	e.exec(t, "INSERT INTO nokey VALUES (1, 'x')")
	e.exec(t, "UPDATE nokey SET name = 'y'")
	e.exec(t, "ALTER PUBLICATION "+e.slot+" ADD TABLE other")
	run(t, inv)
	e.sync(t, inv)
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("name = %q", got)
	}

	e.exec(t, "INSERT INTO codes VALUES ('abc', 'not a number'), ('7', 'seven')")
	e.exec(t, "INSERT INTO other VALUES (1)")
	e.exec(t, "ALTER TABLE users ADD COLUMN nickname text")
	e.exec(t, "UPDATE users SET name = 'Ada 2', nickname = 'A' WHERE id = 1")
	e.sync(t, inv)
	s := inv.Stats()
	if s.Skipped != 1 || s.Undecoded != 2 || !errors.Is(s.LastError, cdc.ErrSkipped) {
		t.Errorf("stats = %+v, want 1 skipped (the unregistered table), 2 undecoded (the text keys)", s)
	}
	// The first read after ALTER TABLE may fail in pgx's statement cache
	// ("cached plan must not change result type"), which it then drops.
	if _, err := e.users.Get(ctx, 1); err != nil {
		t.Logf("first read after ALTER TABLE: %v", err)
	}
	if got := e.name(t, 1); got != "Ada 2" {
		t.Errorf("after ALTER TABLE: name = %q, want Ada 2", got)
	}
	if s.Changes < 2 {
		t.Errorf("stats = %+v: the mappable changes were not applied", s)
	}
}

// fakeTarget names a table but is not a repository.
type fakeTarget struct{}

func (fakeTarget) Table() string { return "users" }

// Register takes repositories made by repo.New only: anything else has no
// way to apply a change.
func TestRegister_notARepository(t *testing.T) {
	inv, err := cdc.New("postgres://127.0.0.1:1/none", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []cdc.Target{fakeTarget{}, nil, (*repo.Repository[code, int64])(nil)} {
		if err := inv.Register(target); !errors.Is(err, cdc.ErrInvalid) {
			t.Errorf("Register(%T) err = %v, want ErrInvalid", target, err)
		}
	}
}
