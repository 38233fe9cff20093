package cdc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestInvalidator_outOfBand(t *testing.T) {
	t.Parallel()
	testOutOfBand(t, redisEnv(t))
}

func TestInvalidator_outOfBand_cluster(t *testing.T) {
	t.Parallel()
	rc := testcontainers.RedisCluster(t)
	testOutOfBand(t, newEnv(t, rc.Client, rc.Namespace))
}

// Plain SQL inserts, updates, deletes and truncates, which the repository
// never sees, reach the cache: rows, cached absences, the Bloom filter and
// GetBy mappings. Cached values live for an hour, so only the Invalidator
// can have refreshed them.
func testOutOfBand(t *testing.T, e *env) {
	ctx := context.Background()
	e.exec(t, `INSERT INTO users (id, email, name, created_at, updated_at) VALUES
		(1, 'ada@example.com', 'Ada', now(), now()), (2, 'bob@example.com', 'Bob', now(), now())`)
	if err := e.users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	inv := e.invalidator(t, cdc.Options{})
	run(t, inv)
	e.sync(t, inv)

	// Prime the cache: a row, absences by id and by unique value.
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("name = %q", got)
	}
	for _, id := range []int64{2, 3} {
		if _, err := e.users.Get(ctx, id); id == 3 && !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Get(3) err = %v, want ErrNotFound", err)
		}
	}
	if _, err := e.users.GetBy(ctx, "email", "cy@example.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("GetBy err = %v, want ErrNotFound", err)
	}
	if _, err := e.users.GetBy(ctx, "email", "ada@example.com"); err != nil {
		t.Fatal(err)
	}

	e.exec(t, "UPDATE users SET name = 'Ada Lovelace', email = 'ada@lovelace.org' WHERE id = 1")
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (3, 'cy@example.com', 'Cy', now(), now())")
	e.exec(t, "DELETE FROM users WHERE id = 2")
	e.sync(t, inv)

	if got := e.name(t, 1); got != "Ada Lovelace" {
		t.Errorf("after UPDATE: name = %q, want Ada Lovelace", got)
	}
	if got := e.name(t, 3); got != "Cy" {
		t.Errorf("after INSERT: name = %q, want Cy", got)
	}
	if u, err := e.users.GetBy(ctx, "email", "cy@example.com"); err != nil || u.ID != 3 {
		t.Errorf("after INSERT: GetBy = %+v, %v; want id 3", u, err)
	}
	if _, err := e.users.Get(ctx, 2); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("after DELETE: Get(2) err = %v, want ErrNotFound", err)
	}
	if _, err := e.users.GetBy(ctx, "email", "ada@example.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("after UPDATE of the email: GetBy(old) err = %v, want ErrNotFound", err)
	}

	// TRUNCATE drops the entity's keys and nothing else of the namespace.
	other := e.ns + ":unrelated"
	if err := e.rdb.Set(ctx, other, "keep", 0).Err(); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "TRUNCATE users CASCADE")
	e.sync(t, inv)
	for _, id := range []int64{1, 3} {
		if _, err := e.users.Get(ctx, id); !errors.Is(err, repo.ErrNotFound) {
			t.Errorf("after TRUNCATE: Get(%d) err = %v, want ErrNotFound", id, err)
		}
	}
	if _, err := e.users.GetBy(ctx, "email", "cy@example.com"); !errors.Is(err, repo.ErrNotFound) {
		t.Errorf("after TRUNCATE: GetBy err = %v, want ErrNotFound", err)
	}
	if n, err := e.rdb.Exists(ctx, other).Result(); err != nil || n != 1 {
		t.Errorf("TRUNCATE removed an unrelated key: exists = %d, %v", n, err)
	}
	if s := inv.Stats(); s.Transactions < 4 || s.Changes < 4 || s.Skipped != 0 || !s.Active {
		t.Errorf("stats = %+v", s)
	}
}

// A write whose COMMIT reply is lost (the client saw an error, so the
// repository's own invalidation never ran) still reaches the cache.
func TestInvalidator_lostCommitReply(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	if err := e.users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	inv := e.invalidator(t, cdc.Options{})
	// The precondition below reads the stale entry through the cache,
	// which the recovery gate would bypass while no process applies.
	cdc.NoRecoveryGate(inv)
	if err := inv.Setup(ctx); err != nil { // capture from here on
		t.Fatal(err)
	}
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("name = %q", got)
	}

	conn, err := pgconn.Connect(ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN; UPDATE users SET name = 'Lost' WHERE id = 1").ReadAll(); err != nil {
		t.Fatal(err)
	}
	commit, err := (&pgproto3.Query{String: "COMMIT"}).Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Send COMMIT and drop the connection before the reply arrives.
	if _, err := conn.Conn().Write(commit); err != nil {
		t.Fatal(err)
	}
	_ = conn.Conn().Close()
	waitFor(t, "the server to commit", func() bool {
		var name string
		return e.db.Raw("SELECT name FROM users WHERE id = 1").Scan(&name).Error == nil && name == "Lost"
	})
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("without the Invalidator the cache should still be stale, got %q", got)
	}

	run(t, inv)
	e.sync(t, inv)
	if got := e.name(t, 1); got != "Lost" {
		t.Errorf("name = %q, want Lost", got)
	}
}

// An Invalidator that dies after applying a transaction but before its
// position counts as applied leaves the slot before that transaction: the
// next one replays it.
func TestInvalidator_killedBetweenApplyAndConfirm(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	if err := e.users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	// A status update after every transaction: the slot is confirmed as
	// far as possible, so that only the crash can leave it behind.
	opts := cdc.Options{StatusInterval: 1}
	first := e.invalidator(t, opts)
	killed := make(chan cdc.LSN, 1)
	armed := make(chan struct{})
	cdc.SetAfterApply(first, func(end cdc.LSN) error {
		select {
		case <-armed:
			killed <- end
			return errors.New("killed")
		default:
			return nil
		}
	})
	stop := run(t, first)
	e.exec(t, "UPDATE users SET name = 'Before' WHERE id = 1")
	e.sync(t, first)
	before := first.Stats().Applied
	waitFor(t, "the slot to confirm the first update", func() bool { return e.slotConfirmed(t, e.slot) >= before })

	close(armed)
	e.exec(t, "UPDATE users SET name = 'After' WHERE id = 1")
	end := <-killed
	stop()
	if got := e.slotConfirmed(t, e.slot); got >= end {
		t.Fatalf("slot confirmed %s, past the transaction ending at %s that was never confirmed", got, end)
	}

	second := e.invalidator(t, cdc.Options{})
	run(t, second)
	if err := second.Wait(ctx, end); err != nil {
		t.Fatal(err)
	}
	if s := second.Stats(); s.Transactions < 1 || s.Changes < 1 {
		t.Errorf("the second Invalidator did not replay the transaction: %+v", s)
	}
	if got := e.name(t, 1); got != "After" {
		t.Errorf("name = %q, want After", got)
	}
	waitFor(t, "the slot to confirm the replayed transaction", func() bool { return e.slotConfirmed(t, e.slot) >= end })
}

// A transaction larger than BatchSize is applied in batches, and every row
// of it is refreshed.
func TestInvalidator_largeTransaction(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	e.exec(t, `INSERT INTO users (id, email, name, created_at, updated_at)
		SELECT i, 'u' || i || '@example.com', 'old', now(), now() FROM generate_series(1, 200) i`)
	if err := e.users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	inv := e.invalidator(t, cdc.Options{BatchSize: 16})
	run(t, inv)
	e.sync(t, inv)
	for id := int64(1); id <= 200; id++ {
		e.name(t, id)
	}
	e.exec(t, "UPDATE users SET name = 'new'")
	e.sync(t, inv)
	for id := int64(1); id <= 200; id++ {
		if got := e.name(t, id); got != "new" {
			t.Fatalf("id %d: name = %q, want new", id, got)
		}
	}
	if s := inv.Stats(); s.Changes < 200 {
		t.Errorf("stats = %+v", s)
	}
}
