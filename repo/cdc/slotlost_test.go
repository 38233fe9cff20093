package cdc_test

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"testing"

	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// A slot that fell further behind than max_slot_wal_keep_size is
// invalidated by PostgreSQL (wal_status 'lost') and can no longer stream.
// The Invalidator drops it, creates it anew, invalidates every cached row
// and warms the Bloom filter before it applies a change from the new slot:
// a row changed in the lost WAL is not served stale, one inserted there is
// found, and streaming goes on.
func TestInvalidator_slotLost(t *testing.T) {
	t.Parallel()
	// A server of its own: a small max_slot_wal_keep_size would invalidate
	// the slots of other tests too.
	pg := testcontainers.PrivateLogicalPostgres(t, "max_slot_wal_keep_size=1MB")
	rn := testcontainers.Redis(t)
	e := newEnvOn(t, pg, rn.Client, rn.Namespace)
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	if err := e.users.WarmFilter(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := e.invalidator(t, cdc.Options{})
	stop := run(t, first)
	e.sync(t, first)
	if got := e.name(t, 1); got != "Ada" { // cached for an hour
		t.Fatalf("name = %q", got)
	}
	stop()

	// While no process reads the slot, a change, then more WAL than the
	// slot may keep.
	e.exec(t, "UPDATE users SET name = 'Ada 2' WHERE id = 1")
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (2, 'bob@example.com', 'Bob', now(), now())")
	e.loseSlot(t)
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("before recovery: name = %q, want the stale cached Ada", got)
	}
	if _, err := e.users.Get(context.Background(), 2); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("before recovery: Get(2) err = %v, want ErrNotFound (the filter never saw the insert)", err)
	}

	// Two restarted processes find the slot lost at once: one replaces it.
	opts := cdc.Options{StandbyRetry: 100 * time.Millisecond}
	a, b := e.invalidator(t, opts), e.invalidator(t, opts)
	run(t, a)
	run(t, b)
	recreated := func() uint64 { return a.Stats().SlotsRecreated + b.Stats().SlotsRecreated }
	waitFor(t, "the slot to be recreated", func() bool { return recreated() > 0 && (a.Stats().Active || b.Stats().Active) })
	inv := a
	if b.Stats().Active {
		inv = b
	}
	e.sync(t, inv)
	if got := e.name(t, 1); got != "Ada 2" {
		t.Errorf("after recovery: name = %q, want Ada 2 (the change in the lost WAL)", got)
	}
	if got := e.name(t, 2); got != "Bob" { // the insert in the lost WAL
		t.Errorf("after recovery: Get(2) = %q, want Bob", got)
	}
	if s := e.slotStatus(t); s != "reserved" {
		t.Errorf("new slot's wal_status = %q, want reserved", s)
	}
	e.exec(t, "UPDATE users SET name = 'Ada 3' WHERE id = 1")
	e.sync(t, inv)
	if got := e.name(t, 1); got != "Ada 3" {
		t.Errorf("after a later change: name = %q, want Ada 3", got)
	}
	s := inv.Stats()
	if recreated() != 1 || s.Changes < 2 || first.Stats().SlotsRecreated != 0 {
		t.Errorf("stats %+v and %+v (first process: %+v), want one recreation, and the invalidation and the update applied",
			a.Stats(), b.Stats(), first.Stats())
	}
	t.Logf("holder %+v; other %+v", s, map[bool]*cdc.Invalidator{true: b, false: a}[inv == a].Stats())
}

// The slot is lost while a process holds it, stuck on a transaction while
// Redis is down: PostgreSQL ends its connection; once Redis is back the
// process finishes what it received, then recreates the slot and streams on.
func TestInvalidator_slotLostWhileHeld(t *testing.T) {
	t.Parallel()
	pg := testcontainers.PrivateLogicalPostgres(t, "max_slot_wal_keep_size=1MB")
	srv := testcontainers.NewRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnvOn(t, pg, rdb, "ak")
	inv := e.invalidator(t, cdc.Options{MaxBackoff: 100 * time.Millisecond})
	run(t, inv)
	e.sync(t, inv)

	srv.Stop()
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	waitFor(t, "the Invalidator to fail on Redis", func() bool { return inv.Stats().Errors > 0 })
	e.loseSlot(t)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the slot to be recreated", func() bool { return inv.Stats().SlotsRecreated == 1 })
	e.exec(t, "UPDATE users SET name = 'Ada 2' WHERE id = 1")
	e.sync(t, inv)
	if got := e.name(t, 1); got != "Ada 2" {
		t.Errorf("name = %q, want Ada 2", got)
	}
	t.Logf("stats %+v", inv.Stats())
}

// loseSlot writes WAL and checkpoints until PostgreSQL invalidates the
// test's slot (it must be on a server with a small max_slot_wal_keep_size,
// and nobody reading it).
func (e *env) loseSlot(t *testing.T) {
	t.Helper()
	e.exec(t, "CREATE TABLE wal_filler (v text)")
	for round := 0; ; round++ {
		if s := e.slotStatus(t); s == "lost" {
			t.Logf("slot lost after %d rounds", round)
			return
		}
		if round == 20 {
			t.Fatalf("slot not lost after %d rounds of WAL switches and checkpoints", round)
		}
		// Each switch starts a new 16 MB segment; the checkpoint
		// invalidates slots whose oldest segment is beyond the cap.
		for range 3 {
			e.exec(t, "INSERT INTO wal_filler SELECT repeat('x', 1000) FROM generate_series(1, 100)")
			e.exec(t, "SELECT pg_switch_wal()")
		}
		e.exec(t, "CHECKPOINT")
	}
}

// slotStatus returns the test slot's wal_status.
func (e *env) slotStatus(t *testing.T) string {
	t.Helper()
	var s string
	if err := e.db.Raw("SELECT coalesce(wal_status, '') FROM pg_replication_slots WHERE slot_name = ?", e.slot).Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	return s
}
