package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// Modify without a condition never reports ErrConditionFailed: a row that
// was absent when its UPDATE ran, and inserted again before Modify looked
// why nothing was written, is ErrNotFound.
func TestModify_absentThenBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	u := sample.User{Email: "back@example.com", Name: "a"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Exec("DELETE FROM users WHERE id = ?", u.ID).Error; err != nil {
		t.Fatal(err)
	}
	// Once, right after the Modify's UPDATE found nothing: the row comes back.
	var armed atomic.Bool
	armed.Store(true)
	back := func(db *gorm.DB) {
		if db.Statement.Table == "users" && armed.CompareAndSwap(true, false) {
			err := db.Session(&gorm.Session{NewDB: true}).Exec(
				"INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?, ?, 'back', now(), now())", u.ID, u.Email).Error
			if err != nil {
				t.Error(err)
			}
		}
	}
	if err := e.db.Callback().Update().After("gorm:update").Register("test:back", back); err != nil {
		t.Fatal(err)
	}
	_, err := users.Modify(ctx, u.ID, map[string]any{"name": "b"})
	if armed.Load() {
		t.Fatal("the row was not inserted again after the UPDATE")
	}
	if !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("Modify of a row absent when it ran: %v, want ErrNotFound", err)
	}
}

// Modify with a condition, of a row absent when its UPDATE ran and back
// before Modify looked why nothing was written: a row that meets the
// condition is modified (its UPDATE runs again), one that fails it is
// ErrConditionFailed, and with no row back it is ErrNotFound.
func TestModify_conditionAbsentThenBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	var armed atomic.Bool
	var backName string
	back := func(db *gorm.DB) {
		if db.Statement.Table == "users" && backName != "" && armed.CompareAndSwap(true, false) {
			id := *db.Statement.Context.Value(idKey{}).(*int64)
			err := db.Session(&gorm.Session{NewDB: true}).Exec(
				"INSERT INTO users (id, email, name, created_at, updated_at) VALUES (?, ?, ?, now(), now())", id, fmt.Sprint("back", id, "@example.com"), backName).Error
			if err != nil {
				t.Error(err)
			}
		}
	}
	if err := e.db.Callback().Update().After("gorm:update").Register("test:back", back); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		back    string // the name of the row put back; "" for none
		wantErr error  // nil: modified
	}{
		{"meets", nil},
		{"fails", repo.ErrConditionFailed},
		{"", repo.ErrNotFound},
	} {
		u := sample.User{Email: fmt.Sprint(tc.back, "@example.com"), Name: "a"}
		if err := users.Create(ctx, &u); err != nil {
			t.Fatal(err)
		}
		if err := e.db.Exec("DELETE FROM users WHERE id = ?", u.ID).Error; err != nil {
			t.Fatal(err)
		}
		backName = tc.back
		armed.Store(true)
		got, err := users.Modify(context.WithValue(ctx, idKey{}, &u.ID), u.ID, map[string]any{"name": "b"}, gorm.Expr("name = ?", "meets"))
		if tc.back != "" && armed.Load() {
			t.Fatalf("%q: the row was not put back after the UPDATE", tc.back)
		}
		if !errors.Is(err, tc.wantErr) || err == nil && got.Name != "b" {
			t.Fatalf("back %q: Modify = %+v, %v; want %v", tc.back, got, err, tc.wantErr)
		}
	}
}

type idKey struct{}
