package repo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// sayOnce fails when err's message repeats the package prefix.
func sayOnce(t *testing.T, err error) {
	t.Helper()
	if n := strings.Count(err.Error(), "repo:"); n != 1 {
		t.Errorf("%q says \"repo:\" %d times, want once", err, n)
	}
}

func TestErrors_notFoundSaysPrefixOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	for name, get := range map[string]func() error{
		"Get":    func() error { _, err := users.Get(ctx, 404); return err },
		"GetBy":  func() error { _, err := users.GetBy(ctx, "email", "nobody@example.com"); return err },
		"Update": func() error { return users.Update(ctx, &sample.User{ID: 404, Email: "x@example.com"}) },
		"Delete": func() error { return users.Delete(ctx, 404) },
	} {
		err := get()
		if !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("%s: %v, want ErrNotFound", name, err)
		}
		sayOnce(t, err)
	}
}

// TestErrors_duplicateWithoutTranslateError: the test database is opened
// without gorm.Config{TranslateError: true}, so GORM hands back the
// driver's error; repo still maps a unique violation to ErrDuplicate.
func TestErrors_duplicateWithoutTranslateError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if e.db.Config.TranslateError {
		t.Fatal("the test needs a *gorm.DB without TranslateError")
	}
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	a := sample.User{Email: "dup@example.com", Name: "A"}
	if err := users.Create(ctx, &a); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"Create": func() error { return users.Create(ctx, &sample.User{Email: "dup@example.com", Name: "B"}) },
		"Put":    func() error { return users.Put(ctx, &sample.User{ID: a.ID + 1, Email: "dup@example.com", Name: "C"}) },
		"Update": func() error {
			b := sample.User{Email: "other@example.com", Name: "D"}
			if err := users.Create(ctx, &b); err != nil {
				return err
			}
			b.Email = "dup@example.com"
			return users.Update(ctx, &b)
		},
	} {
		err := write()
		if !errors.Is(err, repo.ErrDuplicate) || !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("%s: %v, want ErrDuplicate matching gorm.ErrDuplicatedKey", name, err)
		}
		sayOnce(t, err)
	}
}

// TestPut_returnsStoredRow: the row Put hands back is the row the next Get
// reads, timestamps included, when Put overwrites an existing row.
func TestPut_returnsStoredRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	u := sample.User{Email: "put@example.com", Name: "First"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	stored, err := users.Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	created := stored.CreatedAt // as the database keeps it (microseconds)
	// A client sends back what it read, with an old UpdatedAt and no CreatedAt.
	put := sample.User{ID: u.ID, Email: u.Email, Name: "Second", UpdatedAt: u.UpdatedAt.Add(-time.Hour)}
	if err := users.Put(ctx, &put); err != nil {
		t.Fatal(err)
	}
	got, err := users.Get(ctx, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !put.UpdatedAt.Equal(got.UpdatedAt) || !put.CreatedAt.Equal(got.CreatedAt) {
		t.Errorf("Put returned updated_at %v created_at %v; Get reads %v, %v",
			put.UpdatedAt, put.CreatedAt, got.UpdatedAt, got.CreatedAt)
	}
	if !got.CreatedAt.Equal(created) || !got.UpdatedAt.After(stored.UpdatedAt) || got.Name != "Second" {
		t.Errorf("stored row %+v, want created_at %v kept, a later updated_at, name Second", got, created)
	}
}
