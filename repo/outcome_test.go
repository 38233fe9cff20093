package repo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
)

// The writes below lose the reply to their COMMIT: the server commits, the
// client sees a broken connection. Without CDC only the repository's own
// upkeep of a write of unknown outcome can keep the cache and the filter
// true to the table. Each check returns what it found wrong; the tests
// want nothing, and the same checks with the rule switched off must find
// something.

// lossy is a pool of its own on a test's database, through a proxy that
// can lose the replies to COMMITs.
type lossy struct {
	db *gorm.DB
	p  *faultproxy.Proxy
}

// lossy opens it, with GORM configured by cfg, closed at cleanup.
func (e *env) lossy(t *testing.T, cfg gorm.Config) lossy {
	t.Helper()
	p, dsn, err := faultproxy.NewPostgres(e.dsn)
	if err != nil {
		t.Skipf("no TCP proxy in front of the test database: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	cfg.Logger = logger.Discard
	db, err := gorm.Open(postgres.Open(dsn), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return lossy{db: db, p: p}
}

// loseReply runs write with the reply to its COMMIT (or to any statement
// that carries the word "commit") lost, and returns its error.
func (l lossy) loseReply(t *testing.T, write func() error) error {
	t.Helper()
	before := l.p.Dropped()
	l.p.DropCommitReplies()
	err := write()
	l.p.Heal()
	if err == nil || l.p.Dropped() == before {
		t.Fatalf("write = %v with %d replies dropped; want an error, the reply lost", err, l.p.Dropped()-before)
	}
	if errors.Is(err, repo.ErrAfterCommit) || errors.Is(err, repo.ErrDuplicate) || errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("write of unknown outcome = %v; want the database's error, not a repository verdict", err)
	}
	return err
}

func newRepoOn[T any](t *testing.T, db *gorm.DB, cache *cacheaside.Cache, o repo.Options) *repo.Repository[T, int64] {
	t.Helper()
	r, err := repo.New[T, int64](db, cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	warm(t, r, o)
	return r
}

// userIDByEmail reads the id of the user with email from the table.
func (e *env) userIDByEmail(t *testing.T, email string) int64 {
	t.Helper()
	var u sample.User
	if err := e.db.Where("email = ?", email).Take(&u).Error; err != nil {
		t.Fatalf("the write whose reply was lost is not in the table: %v", err)
	}
	return u.ID
}

// checkUnknownCreate creates a user on a repository with a Bloom filter,
// the reply to the COMMIT lost, and reads it back by the id the table
// holds. id 0 lets the database generate it; with skipTx the INSERT
// commits on its own, so that its generated id is lost with the reply.
func checkUnknownCreate(t *testing.T, id int64, skipTx bool) (problems []string) {
	e := newEnv(t)
	l := e.lossy(t, gorm.Config{SkipDefaultTransaction: skipTx})
	o := repo.Options{Filter: e.filterOptions(1000)}
	o.FilterClient = e.rdb
	users := newRepoOn[sample.User](t, l.db, e.cache, o)
	ctx := context.Background()
	before := repo.GetAfterCommitStats()
	u := sample.User{ID: id, Email: "bob@example.com", Name: "Bob"}
	if skipTx { // no COMMIT: the proxy loses the reply of the INSERT that carries the word
		u.Email = "commit@example.com"
	}
	t.Logf("Create with the reply lost: %v", l.loseReply(t, func() error { return users.Create(ctx, &u) }))
	stored := e.userIDByEmail(t, u.Email)
	if got, err := users.Get(ctx, stored); err != nil || got.Name != "Bob" {
		problems = append(problems, fmt.Sprintf("Get(%d) of the committed row = %+v, %v", stored, got, err))
	}
	after := repo.GetAfterCommitStats()
	if after.Unknown == before.Unknown {
		problems = append(problems, "AfterCommitStats.Unknown did not count the write")
	}
	if skipTx && after.Distrusts == before.Distrusts {
		problems = append(problems, "AfterCommitStats.Distrusts did not count the lost generated id")
	}
	return problems
}

// checkUnknownCreateMany creates two users in one CreateMany (its own
// transaction) on a repository with a Bloom filter, the reply to the
// COMMIT lost, and reads them back.
func checkUnknownCreateMany(t *testing.T) (problems []string) {
	e := newEnv(t)
	l := e.lossy(t, gorm.Config{})
	o := repo.Options{Filter: e.filterOptions(1000)}
	o.FilterClient = e.rdb
	users := newRepoOn[sample.User](t, l.db, e.cache, o)
	ctx := context.Background()
	us := []sample.User{{ID: 7, Email: "g@example.com", Name: "G"}, {ID: 8, Email: "h@example.com", Name: "H"}}
	t.Logf("CreateMany with the reply lost: %v", l.loseReply(t, func() error { return users.CreateMany(ctx, us) }))
	for _, u := range us {
		if got, err := users.Get(ctx, u.ID); err != nil || got.Name != u.Name {
			problems = append(problems, fmt.Sprintf("Get(%d) of the committed row = %+v, %v", u.ID, got, err))
		}
	}
	return problems
}

// How checkUnknownUpdate moves its row.
const (
	byUpdate = iota
	byUpdateInTx
	byModify
)

// lossyItems is a test's qitems repository, with its by-category query,
// on a lossy pool.
func lossyItems(t *testing.T) (*env, lossy, *repo.Repository[qitem, int64], *repo.Query[qitem, int64]) {
	e := newEnv(t)
	if err := e.db.AutoMigrate(&qitem{}); err != nil {
		t.Fatal(err)
	}
	l := e.lossy(t, gorm.Config{})
	items := newRepoOn[qitem](t, l.db, e.cache, repo.Options{})
	q, err := repo.NewQuery(items, byCategory)
	if err != nil {
		t.Fatal(err)
	}
	return e, l, items, q
}

// checkUnknownUpdate moves a cached row to another category with the
// reply to the COMMIT lost, then reads the row and both categories'
// cached lists; how says which write moves it.
func checkUnknownUpdate(t *testing.T, how int) (problems []string) {
	e, l, items, q := lossyItems(t)
	ctx := context.Background()
	for _, it := range []qitem{{ID: 1, CategoryID: 1, CreatedAt: t0, Price: 100}, {ID: 2, CategoryID: 2, CreatedAt: t0, Price: 100}} {
		if err := items.Create(ctx, &it); err != nil {
			t.Fatal(err)
		}
	}
	// Cache the row and both lists.
	if got, err := items.Get(ctx, 1); err != nil || got.Price != 100 {
		t.Fatalf("Get(1) = %+v, %v", got, err)
	}
	for cat, want := range map[int64][]int64{1: {1}, 2: {2}} {
		if got := listIDs(t, q, cat, 10); !slices.Equal(got, want) {
			t.Fatalf("list %d = %v, want %v", cat, got, want)
		}
	}

	moved := qitem{ID: 1, CategoryID: 2, CreatedAt: t0, Price: 200}
	write := map[int]func() error{
		byUpdate: func() error { return items.Update(ctx, &moved) },
		byUpdateInTx: func() error {
			return repo.Transaction(ctx, l.db, func(tx *repo.Tx) error { return items.WithTx(tx).Update(ctx, &moved) })
		},
		byModify: func() error {
			_, err := items.Modify(ctx, 1, map[string]any{"category_id": 2, "price": gorm.Expr("price + 100")})
			return err
		},
	}[how]
	t.Logf("Update with the reply lost: %v", l.loseReply(t, write))
	var stored qitem
	if err := e.db.Take(&stored, 1).Error; err != nil || stored.Price != 200 {
		t.Fatalf("the update whose reply was lost is not in the table: %+v, %v", stored, err)
	}
	if got, err := items.Get(ctx, 1); err != nil || got.Price != 200 || got.CategoryID != 2 {
		problems = append(problems, fmt.Sprintf("Get(1) = %+v, %v; want price 200 in category 2", got, err))
	}
	for _, cat := range []int64{1, 2} {
		if got, want := listIDs(t, q, cat, 10), sqlIDs(t, e, cat); !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("list %d = %v, the table's %v", cat, got, want))
		}
	}
	return problems
}

// unknownChecks are the checks, by name.
var unknownChecks = map[string]func(t *testing.T) []string{
	"create client id":            func(t *testing.T) []string { return checkUnknownCreate(t, 7, false) },
	"create generated id":         func(t *testing.T) []string { return checkUnknownCreate(t, 0, false) },
	"create generated id lost":    func(t *testing.T) []string { return checkUnknownCreate(t, 0, true) },
	"create many":                 checkUnknownCreateMany,
	"update cached row and lists": func(t *testing.T) []string { return checkUnknownUpdate(t, byUpdate) },
	"transaction of the update":   func(t *testing.T) []string { return checkUnknownUpdate(t, byUpdateInTx) },
	"modify cached row and lists": func(t *testing.T) []string { return checkUnknownUpdate(t, byModify) },
}

func TestWrite_unknownOutcome(t *testing.T) {
	t.Parallel()
	for name, check := range unknownChecks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, p := range check(t) {
				t.Error(p)
			}
		})
	}
}

// Without the rule each check finds the cache or the filter wrong. (Not
// parallel: the switch is process-wide.)
func TestWrite_unknownOutcome_failsWithoutRule(t *testing.T) {
	repo.SetUnknownUpkeepOff(true)
	defer repo.SetUnknownUpkeepOff(false)
	for name, check := range unknownChecks {
		t.Run(name, func(t *testing.T) {
			problems := check(t)
			if len(problems) == 0 {
				t.Fatal("nothing wrong without the rule: the check cannot fail")
			}
			for _, p := range problems {
				t.Log("without the rule: " + p)
			}
		})
	}
}

// A Transaction whose COMMIT is lost on its way (the server rolls back,
// the client sees its connection break) has an unknown outcome: its
// upkeep runs as if it had committed, but its lists are bumped, not
// patched, since a line would list the row where the table never had it.
// The transaction moves a row from list 1 to list 2 and renumbers another
// in list 2; both lists must read as the table, unchanged.
func TestTransaction_lostCommitBumps(t *testing.T) {
	t.Parallel()
	if problems := playLostCommit(t); len(problems) > 0 {
		t.Fatal(problems)
	}
}

// With the lists patched anyway the same play lists rows the table never
// held. (Not parallel: the switch is process-wide.)
func TestTransaction_lostCommitBumps_failsPatched(t *testing.T) {
	testswitch.UnknownBumpOff.Store(true)
	defer testswitch.UnknownBumpOff.Store(false)
	problems := playLostCommit(t)
	if len(problems) == 0 {
		t.Fatal("the lists are right with the lost COMMIT's lines applied: the test proves nothing")
	}
	t.Log(problems)
}

func playLostCommit(t *testing.T) (problems []string) {
	e, l, items, q := lossyItems(t)
	ctx := context.Background()
	for _, it := range []qitem{{ID: 1, CategoryID: 1, CreatedAt: t0, Price: 1}, {ID: 2, CategoryID: 2, CreatedAt: t0, Price: 1},
		{ID: 3, CategoryID: 2, CreatedAt: t0.Add(time.Minute), Price: 1}} {
		if err := items.Create(ctx, &it); err != nil {
			t.Fatal(err)
		}
	}
	for _, cat := range []int64{1, 2} {
		listIDs(t, q, cat, 10) // cached windows: the lines would patch them
	}
	before := q.Stats()
	l.p.DropCommits()
	err := repo.Transaction(ctx, l.db, func(tx *repo.Tx) error {
		if err := items.WithTx(tx).Update(ctx, &qitem{ID: 1, CategoryID: 2, CreatedAt: t0.Add(time.Hour), Price: 1}); err != nil {
			return err
		}
		return items.WithTx(tx).Update(ctx, &qitem{ID: 2, CategoryID: 2, CreatedAt: t0.Add(2 * time.Hour), Price: 1})
	})
	l.p.Heal()
	if err == nil || l.p.Dropped() == 0 {
		t.Fatalf("Transaction = %v with %d COMMITs dropped; want an error, the COMMIT lost", err, l.p.Dropped())
	}
	if d := q.Stats().Invalidations - before.Invalidations; d == 0 {
		t.Fatal("the transaction of unknown outcome did nothing to the lists")
	}
	for _, cat := range []int64{1, 2} {
		if got, want := listIDs(t, q, cat, 10), sqlIDs(t, e, cat); !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("list %d = %v, the table's %v", cat, got, want))
		}
	}
	return problems
}
