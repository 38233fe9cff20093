package cdc_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// Two Invalidators on one slot: exactly one holds it; when it dies the
// other takes over, from where the first stopped.
func TestInvalidator_standbyTakesOver(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	if err := e.users.WarmFilter(context.Background()); err != nil {
		t.Fatal(err)
	}
	opts := cdc.Options{StandbyRetry: 100 * time.Millisecond}
	a, b := e.invalidator(t, opts), e.invalidator(t, opts)
	stopA := run(t, a)
	waitFor(t, "a to hold the slot", func() bool { return a.Stats().Active })
	stopB := run(t, b)
	// b checks the slot every 100ms; after several checks it still stands by.
	waitFor(t, "b to find the slot busy", func() bool { return !b.Stats().Active && b.Stats().Errors == 0 && a.Stats().Active })
	// b checks on one connection it keeps: its checks start no server
	// process (trying to take the slot started two per try, a connection
	// and a walsender, so 60 in 30 tries). PostgreSQL counts a session
	// when its backend reports its statistics, up to a second late, so a
	// few sessions of the setup above may still be counted in the window:
	// the bound leaves room for them.
	sessions := func() int64 {
		var n int64
		if err := e.db.Raw("SELECT sessions FROM pg_stat_database WHERE datname = current_database()").Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	checks, from := b.Stats().StandbyChecks, sessions()
	waitFor(t, "b to check the slot 30 times", func() bool { return b.Stats().StandbyChecks >= checks+30 })
	n := sessions() - from
	t.Logf("%d sessions started in 30 checks of the stand-by", n)
	if n > 15 {
		t.Errorf("%d sessions started while the stand-by checked the slot 30 times, want at most 15", n)
	}
	e.sync(t, a)
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("name = %q", got)
	}
	e.exec(t, "UPDATE users SET name = 'Ada 2' WHERE id = 1")
	e.sync(t, a)
	if got := e.name(t, 1); got != "Ada 2" {
		t.Fatalf("name = %q", got)
	}
	if b.Stats().Active || b.Stats().Transactions != 0 {
		t.Fatalf("the stand-by applied: %+v", b.Stats())
	}

	stopA()
	died := time.Now()
	e.exec(t, "UPDATE users SET name = 'Ada 3' WHERE id = 1") // while nobody holds the slot
	waitFor(t, "b to take over", func() bool { return b.Stats().Active })
	t.Logf("take-over after %v", time.Since(died).Round(time.Millisecond))
	e.sync(t, b)
	if got := e.name(t, 1); got != "Ada 3" {
		t.Errorf("after the take-over: name = %q, want Ada 3", got)
	}
	stopB()
}

// With Redis down the Invalidator keeps its position, counts errors and
// reports the lag; once Redis is back it applies every change it held.
func TestInvalidator_redisDown(t *testing.T) {
	t.Parallel()
	srv := testcontainers.NewRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, rdb, "ak")
	inv := e.invalidator(t, cdc.Options{StatusInterval: 100 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	run(t, inv)
	e.sync(t, inv)
	before := inv.Stats()

	srv.Stop()
	down := time.Now()
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	e.exec(t, "UPDATE users SET name = 'Ada 2' WHERE id = 1")
	written := e.currentLSN(t)
	waitFor(t, "errors and lag to be reported", func() bool {
		s := inv.Stats()
		return s.Errors > before.Errors && s.Lag > 0 && s.LagBytes > 0
	})
	s := inv.Stats()
	if s.Applied >= written {
		t.Fatalf("applied %s past changes Redis never took (written up to %s)", s.Applied, written)
	}
	if got := e.slotConfirmed(t, e.slot); got >= written {
		t.Fatalf("slot confirmed %s past changes Redis never took", got)
	}
	// Keep Redis down for three seconds in all.
	time.Sleep(3*time.Second - time.Since(down))
	t.Logf("during the outage: %+v", inv.Stats())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	e.sync(t, inv)
	s = inv.Stats()
	if s.Changes < before.Changes+2 || s.Lag != 0 {
		t.Errorf("after the outage: %+v, want both changes applied and no lag", s)
	}
	// The cache sees the final row and the filter knows the inserted id.
	if got := e.name(t, 1); got != "Ada 2" {
		t.Errorf("name = %q, want Ada 2", got)
	}
	waitFor(t, "the slot to confirm the drained changes", func() bool { return e.slotConfirmed(t, e.slot) >= written })
}
