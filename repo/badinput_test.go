package repo_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// coupon is soft-deleted, with a primary key chosen by the caller.
type coupon struct {
	Code      string `gorm:"primaryKey"`
	Name      string
	DeletedAt gorm.DeletedAt
}

// label has a unique text column without a length limit.
type label struct {
	ID   int64
	Text string `gorm:"uniqueIndex"`
}

// ticket's primary key is filled in by a hook.
type ticket struct {
	ID   string `gorm:"primaryKey"`
	Name string
}

func (t *ticket) BeforeCreate(*gorm.DB) error {
	if t.ID == "" {
		t.ID = "T-" + t.Name
	}
	return nil
}

func newRepoOf[T any, ID comparable](t *testing.T, e *env, o repo.Options) *repo.Repository[T, ID] {
	t.Helper()
	if err := e.db.AutoMigrate(new(T)); err != nil {
		t.Fatal(err)
	}
	r, err := repo.New[T, ID](e.db, e.cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// countRows counts T's rows whose column equals v, soft-deleted ones
// included.
func countRows[T any](t *testing.T, db *gorm.DB, column string, v any) int64 {
	t.Helper()
	var n int64
	if err := db.Unscoped().Model(new(T)).Where(column+" = ?", v).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// A soft-deleted row is gone for every read and write, and its primary key
// can be created again; so with WriteThrough, whose Create of a
// soft-deleted key reads the replaced row back.
func TestRepository_softDelete(t *testing.T) {
	t.Parallel()
	for _, wt := range []bool{false, true} {
		t.Run(map[bool]string{false: "invalidate", true: "writeThrough"}[wt], func(t *testing.T) {
			t.Parallel()
			softDelete(t, repo.Options{WriteThrough: wt})
		})
	}
}

func softDelete(t *testing.T, o repo.Options) {
	e := newEnv(t)
	ctx := context.Background()
	coupons := newRepoOf[coupon, string](t, e, o)
	for _, c := range []coupon{{Code: "A", Name: "first"}, {Code: "B", Name: "other"}} {
		if err := coupons.Create(ctx, &c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := coupons.Get(ctx, "A"); err != nil { // cached now
		t.Fatal(err)
	}
	if err := coupons.Delete(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	for range 2 { // loaded, then from the cached "not found"
		_, err := coupons.Get(ctx, "A")
		isNotFound(t, err)
	}
	got, err := coupons.GetMany(ctx, []string{"A", "B"})
	if _, ok := got["A"]; ok || err != nil || got["B"].Name != "other" {
		t.Fatalf("GetMany(A, B) after deleting A = %v, %v; want only B", got, err)
	}
	if ok, err := coupons.Exists(ctx, "A"); ok || err != nil {
		t.Fatalf("Exists(A) = %v, %v", ok, err)
	}
	isNotFound(t, coupons.Delete(ctx, "A"))
	isNotFound(t, coupons.Update(ctx, &coupon{Code: "A", Name: "ghost"}))

	// Created again: readable at once (the cached "not found" is cleared),
	// one row, the new values.
	if err := coupons.Create(ctx, &coupon{Code: "A", Name: "second"}); err != nil {
		t.Fatalf("Create of a soft-deleted id = %v", err)
	}
	if c, err := coupons.Get(ctx, "A"); err != nil || c.Name != "second" || c.DeletedAt.Valid {
		t.Fatalf("Get after the new Create = %+v, %v", c, err)
	}
	if got, err := coupons.GetMany(ctx, []string{"A"}); err != nil || got["A"].Name != "second" {
		t.Fatalf("GetMany after the new Create = %v, %v", got, err)
	}
	if n := countRows[coupon](t, e.db, "code", "A"); n != 1 {
		t.Fatalf("%d rows of A", n)
	}
	// A live row is not replaced.
	err = coupons.Create(ctx, &coupon{Code: "A", Name: "third"})
	if !errors.Is(err, gorm.ErrDuplicatedKey) {
		t.Fatalf("Create of a live id = %v, want gorm.ErrDuplicatedKey", err)
	}
	if c, err := coupons.Get(ctx, "A"); err != nil || c.Name != "second" {
		t.Fatalf("Get after the refused Create = %+v, %v", c, err)
	}
}

func TestRepository_badInput_writes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	coupons := newRepoOf[coupon, string](t, e, repo.Options{})
	long := strings.Repeat("x", 2000)
	// Rows the failed calls must leave alone.
	if err := e.db.Create(&coupon{Code: long, Name: "written outside"}).Error; err != nil {
		t.Fatal(err)
	}
	if err := coupons.Create(ctx, &coupon{Code: "keep", Name: "kept"}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		what string
		call func() error
		want error // nil: any error
	}{
		{"Create, 2000-byte id", func() error { return coupons.Create(ctx, &coupon{Code: long + "!"}) }, repo.ErrInvalidID},
		{"Put, 2000-byte id", func() error { return coupons.Put(ctx, &coupon{Code: long, Name: "changed"}) }, repo.ErrInvalidID},
		{"Update, 2000-byte id", func() error { return coupons.Update(ctx, &coupon{Code: long, Name: "changed"}) }, repo.ErrInvalidID},
		{"Delete, 2000-byte id", func() error { return coupons.Delete(ctx, long) }, repo.ErrInvalidID},
		{"Create, empty id", func() error { return coupons.Create(ctx, &coupon{Name: "no key"}) }, repo.ErrInvalidID},
		{"Put, empty id", func() error { return coupons.Put(ctx, &coupon{Name: "no key"}) }, repo.ErrInvalidID},
		{"Update, empty id", func() error { return coupons.Update(ctx, &coupon{Name: "no key"}) }, repo.ErrInvalidID},
		{"Delete, empty id", func() error { return coupons.Delete(ctx, "") }, repo.ErrInvalidID},
		{"Create(nil)", func() error { return coupons.Create(ctx, nil) }, nil},
		{"Put(nil)", func() error { return coupons.Put(ctx, nil) }, nil},
		{"Update(nil)", func() error { return coupons.Update(ctx, nil) }, nil},
		{"Create, cancelled", func() error { return coupons.Create(cancelled, &coupon{Code: "new"}) }, context.Canceled},
		{"Put, cancelled", func() error { return coupons.Put(cancelled, &coupon{Code: "keep", Name: "changed"}) }, context.Canceled},
		{"Update, cancelled", func() error { return coupons.Update(cancelled, &coupon{Code: "keep", Name: "changed"}) }, context.Canceled},
		{"Delete, cancelled", func() error { return coupons.Delete(cancelled, "keep") }, context.Canceled},
		{"Transaction, cancelled", func() error {
			return repo.Transaction(cancelled, e.db, func(tx *repo.Tx) error {
				return coupons.WithTx(tx).Create(ctx, &coupon{Code: "new"})
			})
		}, context.Canceled},
		{"GetMany, an empty id", func() error { _, err := coupons.GetMany(ctx, []string{"keep", ""}); return err }, repo.ErrInvalidID},
		{"GetMany, a 2000-byte id", func() error { _, err := coupons.GetMany(ctx, []string{"keep", long}); return err }, repo.ErrInvalidID},
	} {
		err := tc.call()
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || errors.Is(err, repo.ErrAfterCommit) {
			t.Errorf("%s: %v, want %v before any write", tc.what, err, tc.want)
		}
	}
	var rows []coupon
	if err := e.db.Unscoped().Order("code").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Name != "kept" || rows[1].Name != "written outside" || rows[1].DeletedAt.Valid {
		t.Fatalf("rows after the refused calls: %+v", rows)
	}
	if c, err := coupons.Get(ctx, "keep"); err != nil || c.Name != "kept" {
		t.Fatalf("Get(keep) = %+v, %v", c, err)
	}

	// A key a hook fills in is not a missing key.
	tickets := newRepoOf[ticket, string](t, e, repo.Options{})
	tk := ticket{Name: "hooked"}
	if err := tickets.Create(ctx, &tk); err != nil || tk.ID != "T-hooked" {
		t.Fatalf("Create with a hook that sets the key = %+v, %v", tk, err)
	}
	if got, err := tickets.Get(ctx, "T-hooked"); err != nil || got.Name != "hooked" {
		t.Fatalf("Get(T-hooked) = %+v, %v", got, err)
	}
}

// A unique value too long to be a cache id could be stored but never read
// by GetBy: every writer refuses it before any SQL, and GetBy refuses it.
func TestRepository_badInput_longUniqueValue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	labels := newRepoOf[label, int64](t, e, repo.Options{})
	long := strings.Repeat("t", 2000)
	l := label{Text: "short"}
	if err := labels.Create(ctx, &l); err != nil {
		t.Fatal(err)
	}
	changed := l
	changed.Text = long
	for _, tc := range []struct {
		what string
		call func() error
	}{
		{"Create", func() error { return labels.Create(ctx, &label{Text: long}) }},
		{"CreateMany", func() error { return labels.CreateMany(ctx, []label{{Text: "ok"}, {Text: long}}) }},
		{"InsertIfAbsent", func() error { _, err := labels.InsertIfAbsent(ctx, &label{Text: long}); return err }},
		{"Update", func() error { c := changed; return labels.Update(ctx, &c) }},
		{"Put", func() error { c := changed; return labels.Put(ctx, &c) }},
		{"PutMany", func() error { return labels.PutMany(ctx, []label{changed}) }},
		{"UpdateColumns", func() error { c := changed; return labels.UpdateColumns(ctx, &c, "text") }},
		{"Modify", func() error { _, err := labels.Modify(ctx, l.ID, map[string]any{"text": long}); return err }},
		{"GetBy", func() error { _, err := labels.GetBy(ctx, "text", long); return err }},
	} {
		if err := tc.call(); !errors.Is(err, repo.ErrInvalidID) {
			t.Errorf("%s with a 2000-byte unique value = %v, want ErrInvalidID", tc.what, err)
		}
	}
	if n := countRows[label](t, e.db, "1", 1); n != 1 {
		t.Errorf("%d rows after the refused writes, want 1", n)
	}
	if got, err := labels.GetBy(ctx, "text", "short"); err != nil || got.ID != l.ID {
		t.Fatalf("GetBy(short) = %+v, %v", got, err)
	}
	// Columns that are not a unique key are not checked.
	if err := labels.UpdateColumns(ctx, &label{ID: l.ID, Text: long}, "id"); err == nil || errors.Is(err, repo.ErrInvalidID) {
		t.Errorf("UpdateColumns(id) = %v, want the primary-key error", err)
	}
}

// Text PostgreSQL cannot store (a NUL byte, invalid UTF-8) and a GetBy
// value of the wrong type are ErrInvalidID before any SQL, not a database
// error, and the error quotes the value.
func TestRepository_badInput_text(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	coupons := newRepoOf[coupon, string](t, e, repo.Options{})
	members := newRepoOf[sample.Member, int64](t, e, repo.Options{})
	if err := members.Create(ctx, &sample.Member{Email: "ada@example.com", Handle: "ada", Name: "Ada"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a\x00b", "a\xffb"} {
		for _, tc := range []struct {
			what string
			call func() error
		}{
			{"Get", func() error { _, err := coupons.Get(ctx, bad); return err }},
			{"GetMany", func() error { _, err := coupons.GetMany(ctx, []string{"A", bad}); return err }},
			{"Delete", func() error { return coupons.Delete(ctx, bad) }},
			{"Create", func() error { return coupons.Create(ctx, &coupon{Code: bad}) }},
			{"Put", func() error { return coupons.Put(ctx, &coupon{Code: bad}) }},
			{"GetBy", func() error { _, err := members.GetBy(ctx, "email", bad); return err }},
			{"Create, unique value", func() error {
				return members.Create(ctx, &sample.Member{Email: bad, Handle: "h", Name: "n"})
			}},
		} {
			err := tc.call()
			if !errors.Is(err, repo.ErrInvalidID) || !strings.Contains(err.Error(), strconv.Quote(bad)) {
				t.Errorf("%s(%q) = %v, want ErrInvalidID quoting the value", tc.what, bad, err)
			}
			// A GetBy value is no id: the error names the lookup.
			if tc.what == "GetBy" && (strings.Contains(err.Error(), "id:") || !strings.Contains(err.Error(), "GetBy email: the value")) {
				t.Errorf("GetBy(email, %q) = %v, want an error that names the lookup's value, not an id", bad, err)
			}
		}
	}
	for _, v := range []any{42, true, 1.5} {
		if _, err := members.GetBy(ctx, "email", v); !errors.Is(err, repo.ErrInvalidID) {
			t.Errorf("GetBy(email, %T) = %v, want ErrInvalidID", v, err)
		}
	}
	type mail string // a named string type is text
	if m, err := members.GetBy(ctx, "email", mail("ada@example.com")); err != nil || m.Handle != "ada" {
		t.Errorf("GetBy(email, mail) = %+v, %v", m, err)
	}
	if n := countRows[coupon](t, e.db, "1", 1); n != 0 {
		t.Errorf("%d coupons after the refused writes, want 0", n)
	}
}

// A database that is gone: every call fails with its error, none reads as
// not found, and nothing is cached, so a live database is asked next.
func TestRepository_badInput_deadDB(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	users := e.users(t, repo.Options{})
	u := sample.User{Email: "alive@example.com", Name: "Alive"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	dead, err := gorm.Open(postgres.Open(e.dsn), &gorm.Config{Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := dead.DB()
	_ = sqlDB.Close()
	// The same entity as users: anything it cached, users would read.
	du, err := repo.New[sample.User, int64](dead, e.cache, &repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	missing := u.ID + 1000
	for _, tc := range []struct {
		what string
		call func() error
	}{
		{"Get", func() error { _, err := du.Get(ctx, u.ID); return err }},
		{"Get, absent id", func() error { _, err := du.Get(ctx, missing); return err }},
		{"GetMany", func() error { _, err := du.GetMany(ctx, []int64{u.ID, missing}); return err }},
		{"GetBy", func() error { _, err := du.GetBy(ctx, "email", u.Email); return err }},
		{"Exists", func() error { _, err := du.Exists(ctx, missing); return err }},
		{"Create", func() error { return du.Create(ctx, &sample.User{Email: "new@example.com", Name: "N"}) }},
		{"Put", func() error { return du.Put(ctx, &sample.User{ID: u.ID, Email: u.Email, Name: "Put"}) }},
		{"Update", func() error { return du.Update(ctx, &sample.User{ID: u.ID, Email: u.Email, Name: "Upd"}) }},
		{"Delete", func() error { return du.Delete(ctx, u.ID) }},
		{"InsertIfAbsent", func() error {
			_, err := du.InsertIfAbsent(ctx, &sample.User{Email: "x@example.com", Name: "X"})
			return err
		}},
		{"Transaction", func() error { return repo.Transaction(ctx, dead, func(*repo.Tx) error { return nil }) }},
	} {
		err := tc.call()
		if err == nil || errors.Is(err, repo.ErrNotFound) || errors.Is(err, repo.ErrAfterCommit) {
			t.Errorf("%s on a closed database = %v, want its error", tc.what, err)
		}
	}
	if got, err := users.Get(ctx, u.ID); err != nil || got.Name != "Alive" {
		t.Fatalf("Get on the live database = %+v, %v", got, err)
	}
	if got, err := users.GetMany(ctx, []int64{u.ID}); err != nil || got[u.ID].Name != "Alive" {
		t.Fatalf("GetMany on the live database = %v, %v", got, err)
	}
	if got, err := users.GetBy(ctx, "email", u.Email); err != nil || got.ID != u.ID {
		t.Fatalf("GetBy on the live database = %+v, %v", got, err)
	}
}

// Redis gone: reads fall through to the database, writes are done and say
// that the cache upkeep failed.
func TestRepository_badInput_deadRedis(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := testcontainersRedisServer(t)
	cache := newCacheOn(t, srv.client, e.ns)
	users, err := repo.New[sample.User, int64](e.db, cache, &repo.Options{AfterCommitErrors: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, b := sample.User{Email: "a@example.com", Name: "A"}, sample.User{Email: "b@example.com", Name: "B"}
	for _, u := range []*sample.User{&a, &b} {
		if err := users.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	if got, err := users.GetMany(ctx, []int64{a.ID, b.ID, b.ID + 1000}); err != nil || len(got) != 2 {
		t.Fatalf("GetMany with Redis down = %v, %v; want both rows", got, err)
	}
	if got, err := users.GetBy(ctx, "email", b.Email); err != nil || got.ID != b.ID {
		t.Fatalf("GetBy with Redis down = %+v, %v", got, err)
	}
	if err := users.Delete(ctx, a.ID); !errors.Is(err, repo.ErrAfterCommit) {
		t.Fatalf("Delete with Redis down = %v, want ErrAfterCommit", err)
	}
	if n := countRows[sample.User](t, e.db, "id", a.ID); n != 0 {
		t.Fatal("the row was not deleted")
	}
	if _, err := users.Get(ctx, a.ID); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Get of the deleted row with Redis down = %v", err)
	}
}
