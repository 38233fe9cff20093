package compat_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/repo"
)

// The embedded backend of the demo: SQLite (pure Go) and miniredis.
func TestRepository_sqliteAndMiniredis(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	db, err := gorm.Open(sqlite.Open("file:"+t.Name()+"?mode=memory&cache=shared"), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if err := sample.Migrate(db); err != nil {
		t.Fatal(err)
	}
	e := newRepoEnv(t, db, rdb, "smoke")
	users := e.users(t, repo.Options{Filter: e.filterOptions(1000)})
	listings := e.listings(t, repo.Options{Filter: e.filterOptions(1000), UniqueKey: []string{"address", "room"}})
	ctx := context.Background()

	// Create, then read twice: the second read is a cache hit.
	u := sample.User{Email: "ada@example.com", Name: "Ada"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	e.sql.Reset()
	for range 2 {
		if got, err := users.Get(ctx, u.ID); err != nil || got.Email != u.Email {
			t.Fatalf("Get = %+v, %v", got, err)
		}
	}
	if n := e.sql.Count(""); n != 1 {
		t.Fatalf("two Gets ran %d SQL statements, want 1", n)
	}
	if users.Stats().Hits != 1 {
		t.Fatalf("stats %+v", users.Stats())
	}

	// Update, GetBy, GetMany, Delete.
	u.Name = "Ada Lovelace"
	if err := users.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if got, err := users.GetBy(ctx, "email", u.Email); err != nil || got.Name != u.Name {
		t.Fatalf("GetBy = %+v, %v", got, err)
	}
	many, err := users.GetMany(ctx, []int64{u.ID, u.ID + 100})
	if err != nil || len(many) != 1 {
		t.Fatalf("GetMany = %v, %v", many, err)
	}
	if err := users.Delete(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	_, err = users.Get(ctx, u.ID)
	isNotFound(t, err)

	// A rolled-back transaction leaves nothing behind.
	boom := errors.New("boom")
	err = repo.Transaction(ctx, db, func(tx *repo.Tx) error {
		v := sample.User{Email: "tx@example.com", Name: "Tx"}
		if err := users.WithTx(tx).Create(ctx, &v); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	_, err = users.GetBy(ctx, "email", "tx@example.com")
	isNotFound(t, err)

	// InsertIfAbsent de-duplicates on SQLite's ON CONFLICT too.
	for round := range 2 {
		for i := range 10 {
			l := sample.Listing{Address: fmt.Sprintf("%d Elm St", i), Room: "1", Rent: 500}
			ok, err := listings.InsertIfAbsent(ctx, &l)
			if err != nil || ok != (round == 0) {
				t.Fatalf("round %d, listing %d: %v, %v", round, i, ok, err)
			}
		}
	}
	var n int64
	db.Model(&sample.Listing{}).Count(&n)
	if n != 10 {
		t.Fatalf("%d listings, want 10", n)
	}

	// Filter upkeep works on miniredis's Lua.
	if err := users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	if err := listings.RebuildFilter(ctx); err != nil {
		t.Fatal(err)
	}
}

// isNotFound checks that err matches all three not-found sentinels.
func isNotFound(t *testing.T, err error) {
	t.Helper()
	for _, target := range []error{repo.ErrNotFound, cacheaside.ErrNotFound, gorm.ErrRecordNotFound} {
		if !errors.Is(err, target) {
			t.Fatalf("error %v does not match %v", err, target)
		}
	}
}

// repoEnv is the part of repo's test env that the test above uses: one
// database and Redis, a Cache on the namespace, and a count of the SQL run.
type repoEnv struct {
	db    *gorm.DB
	rdb   redis.UniversalClient
	ns    string
	cache *cacheaside.Cache
	sql   *testkit.SQLCounter
}

func newRepoEnv(t *testing.T, db *gorm.DB, rdb redis.UniversalClient, ns string) *repoEnv {
	t.Helper()
	cache, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	e := &repoEnv{db: db, rdb: rdb, ns: ns, cache: cache, sql: testkit.CountSQL(t, db)}
	return e
}

// filterOptions sizes a test's Bloom filters in its namespace.
func (e *repoEnv) filterOptions(capacity int64) *bloom.Options {
	return &bloom.Options{Namespace: e.ns, Capacity: capacity, FalsePositiveRate: 0.01}
}

func (e *repoEnv) users(t *testing.T, o repo.Options) *repo.Repository[sample.User, int64] {
	t.Helper()
	if o.Filter != nil {
		o.FilterClient = e.rdb
	}
	r, err := repo.New[sample.User, int64](e.db, e.cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	// Filters complete before the test counts statements: a new one
	// rebuilds itself in the background at its first check otherwise.
	if o.Filter != nil {
		if err := r.WarmFilter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func (e *repoEnv) listings(t *testing.T, o repo.Options) *repo.Repository[sample.Listing, int64] {
	t.Helper()
	if o.Filter != nil {
		o.FilterClient = e.rdb
	}
	r, err := repo.New[sample.Listing, int64](e.db, e.cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	// Filters complete before the test counts statements: a new one
	// rebuilds itself in the background at its first check otherwise.
	if o.Filter != nil {
		if err := r.WarmFilter(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return r
}
