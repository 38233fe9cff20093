package repo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

func TestRepository_GetBy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	u := sample.User{Email: "grace@example.com", Name: "Grace"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}

	e.reset()
	got, err := users.GetBy(ctx, "email", u.Email)
	if err != nil || got.ID != u.ID {
		t.Fatalf("GetBy = %+v, %v", got, err)
	}
	if n := e.sql.Count("SELECT"); n != 2 {
		t.Fatalf("cold GetBy ran %d SELECTs, want 2 (the mapping, the row)", n)
	}
	// Warm: the mapping and the row both come from Redis. The Go field
	// name works too.
	e.reset()
	got, err = users.GetBy(ctx, "Email", u.Email)
	if err != nil || got.ID != u.ID {
		t.Fatalf("warm GetBy = %+v, %v", got, err)
	}
	if n := e.sql.Count(""); n != 0 {
		t.Fatalf("warm GetBy ran %d SQL statements", n)
	}
	if n := e.cmds.count("get"); n != 2 {
		t.Fatalf("warm GetBy sent %d GETs, want 2", n)
	}

	// An absent value is cached as absent.
	_, err = users.GetBy(ctx, "email", "new@example.com")
	isNotFound(t, err)

	// Update changes the email: the old mapping and the cached absence of
	// the new one are both invalidated.
	u.Email = "new@example.com"
	if err := users.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	_, err = users.GetBy(ctx, "email", "grace@example.com")
	isNotFound(t, err)
	got, err = users.GetBy(ctx, "email", "new@example.com")
	if err != nil || got.ID != u.ID || got.Email != u.Email {
		t.Fatalf("GetBy of the new email = %+v, %v", got, err)
	}

	// An update that keeps the email reads the row's email from its
	// cached value (one GET, no SELECT: cachedBefore), then invalidates
	// the row and drops the email's mapping too (a cached "not found"
	// that another process's pending upkeep still owes goes with it), in
	// one round trip (two entities of one Cache share a pipeline; on one
	// node, with the same version TTL, one script call); the next GetBy
	// reloads both: the mapping's SELECT of the id, the row's.
	u.Name = "Grace H."
	e.reset()
	if err := users.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if n, trips, gets := e.cmds.count("evalsha"), e.cmds.roundTrips(), e.cmds.count("get"); n != 1 || trips != 2 || gets != 1 {
		t.Fatalf("update without an email change: %d GETs, %d scripts in %d round trips, want 1 GET (the cached row), then 1 script in 1 (the row's invalidation and the mapping's drop): %v", gets, n, trips, e.cmds.tripLog)
	}
	if n := e.sql.Count("SELECT"); n != 0 {
		t.Fatalf("update of a cached row ran %d SELECTs, want 0", n)
	}
	e.reset()
	if got, _ := users.GetBy(ctx, "email", u.Email); got.Name != "Grace H." {
		t.Fatalf("GetBy after update = %+v", got)
	}
	if n := e.sql.Count("SELECT"); n != 2 {
		t.Fatalf("GetBy after an update without an email change ran %d SELECTs, want 2 (the mapping's, the row's)", n)
	}

	// Delete: the mapping goes too.
	if err := users.Delete(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	_, err = users.GetBy(ctx, "email", u.Email)
	isNotFound(t, err)

	// Bad input.
	if _, err := users.GetBy(ctx, "name", "Grace"); !errors.Is(err, repo.ErrNoUniqueKey) {
		t.Fatalf("GetBy on a non-unique column: %v", err)
	}
	if _, err := users.GetBy(ctx, "email", nil); !errors.Is(err, repo.ErrInvalidID) {
		t.Fatalf("GetBy with nil: %v", err)
	}
	if _, err := users.GetBy(ctx, "email", ""); !errors.Is(err, repo.ErrInvalidID) {
		t.Fatalf("GetBy with an empty value: %v", err)
	}
}

// A write that bypasses the repository leaves a stale mapping; GetBy checks
// the row and never returns the wrong one.
func TestRepository_GetBy_staleMapping(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	users := e.users(t, repo.Options{})
	ctx := context.Background()
	a := sample.User{Email: "a@example.com", Name: "A"}
	if err := users.Create(ctx, &a); err != nil {
		t.Fatal(err)
	}
	if _, err := users.GetBy(ctx, "email", a.Email); err != nil { // cache the mapping
		t.Fatal(err)
	}
	// Behind the repository's back: a's email changes, b takes the old one.
	if err := e.db.Model(&sample.User{}).Where("id = ?", a.ID).Update("email", "a2@example.com").Error; err != nil {
		t.Fatal(err)
	}
	b := sample.User{Email: "a@example.com", Name: "B"}
	if err := e.db.Create(&b).Error; err != nil {
		t.Fatal(err)
	}
	if err := users.Delete(ctx, a.ID); err != nil { // invalidates a's row, and its (new) email mapping
		t.Fatal(err)
	}
	got, err := users.GetBy(ctx, "email", "a@example.com")
	if err != nil || got.ID != b.ID {
		t.Fatalf("GetBy through a stale mapping = %+v, %v; want user %d", got, err, b.ID)
	}
	// The stale mapping was dropped: the next GetBy loads the mapping and
	// b's row once, and the one after is served from Redis.
	for _, want := range []int{2, 0} {
		e.reset()
		if got, err := users.GetBy(ctx, "email", "a@example.com"); err != nil || got.ID != b.ID {
			t.Fatalf("GetBy = %+v, %v", got, err)
		}
		if n := e.sql.Count(""); n != want {
			t.Fatalf("GetBy ran %d SQL statements, want %d", n, want)
		}
	}
}
