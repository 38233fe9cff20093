package cdc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// A COMMIT flushed to the WAL before it is visible (here: held by a
// synchronous standby that never answers, until the waiting backend is
// cancelled, which makes it visible) is applied only once it is visible:
// a read that misses in between loads the old row, and the invalidation
// that follows the commit's visibility removes it. With the rule off the
// invalidation comes first and the old row stays cached after the write
// completed (the bug seen with synchronous_standby_names).
func TestInvalidator_commitVisibleBeforeApplied(t *testing.T) {
	t.Parallel()
	pg := testcontainers.PrivateLogicalPostgres(t, "synchronous_standby_names=ghost", "synchronous_commit=local")
	for _, rule := range []bool{true, false} {
		name := "rule"
		if !rule {
			name = "noRule"
		}
		t.Run(name, func(t *testing.T) {
			rn := testcontainers.Redis(t)
			e := newEnvOn(t, pg, rn.Client, rn.Namespace)
			testCommitVisibility(t, e, rule)
		})
	}
}

func testCommitVisibility(t *testing.T, e *env, rule bool) {
	ctx := context.Background()
	e.exec(t, "DELETE FROM users")
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	inv := e.invalidator(t, cdc.Options{})
	waiting := make(chan struct{})
	var once atomic.Bool
	if rule {
		cdc.OnInvisible(inv, func() {
			if once.CompareAndSwap(false, true) {
				close(waiting)
			}
		})
	} else {
		cdc.IgnoreVisibility(inv)
	}
	run(t, inv)
	e.sync(t, inv)
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("name = %q", got)
	}
	before := inv.Stats().Transactions

	// The write: its COMMIT is flushed, then waits for the standby.
	conn, pid := backend(t, e)
	committed := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, `BEGIN; SET LOCAL synchronous_commit = on;
			UPDATE users SET name = 'Ada Lovelace' WHERE id = 1; COMMIT`)
		committed <- err
	}()

	// Wait until the Invalidator has the transaction: waiting for it to
	// become visible (rule), or having applied it (no rule).
	deadline := time.After(patience)
	if rule {
		select {
		case <-waiting:
		case <-deadline:
			t.Fatal("the Invalidator never waited for the commit to become visible")
		}
	} else {
		for inv.Stats().Transactions == before {
			select {
			case <-deadline:
				t.Fatal("the Invalidator never applied the transaction")
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	// A read in the window: the write has not completed, the old row is
	// right (and, without the rule, is stored under the new token).
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("before the commit is visible: name = %q, want Ada", got)
	}

	// Cancelling the wait for the standby makes the commit visible.
	e.exec(t, "SELECT pg_cancel_backend(?)", pid)
	if err := <-committed; err != nil {
		t.Logf("commit (its wait for the standby cancelled): %v", err)
	}
	var name string
	if err := e.db.Raw("SELECT name FROM users WHERE id = 1").Scan(&name).Error; err != nil || name != "Ada Lovelace" {
		t.Fatalf("the UPDATE is not visible after the cancel: %q, %v", name, err)
	}
	e.sync(t, inv)
	got := e.name(t, 1)
	switch {
	case rule && got != "Ada Lovelace":
		t.Errorf("after the write completed and the Invalidator caught up: name = %q, want Ada Lovelace", got)
	case !rule && got != "Ada":
		t.Errorf("without the rule the old row should have stayed cached, got %q", got)
	}
}

// backend opens a connection of its own to e's database, closed at
// cleanup, and returns it with its server process's id (for
// pg_cancel_backend).
func backend(t testing.TB, e *env) (*pgx.Conn, int32) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return conn, pid
}
