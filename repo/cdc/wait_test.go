package cdc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo/cdc"
)

// Wait in a process that does not hold the slot (one that never runs the
// Invalidator, and one that stands by) returns once the holder has
// applied the write, and a read through the cache then sees it. The
// holder reports its position to the server only when asked: its
// StatusInterval is an hour and its session has no wal_sender_timeout,
// so the server never asks for a report. Without the Wait's message to
// the log (the rule off) the other process's Wait does not return.
func TestWait_otherProcess(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	if err := e.users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	// Drops the slot at cleanup, after the holder's Run returned.
	standby := e.invalidator(t, cdc.Options{StandbyRetry: time.Hour})
	quiet := e.dsn + sep(e.dsn) + "options=-c%20wal_sender_timeout%3D0"
	holder, err := cdc.New(quiet, &cdc.Options{Slot: e.slot, StatusInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Register(e.users); err != nil {
		t.Fatal(err)
	}
	run(t, holder)
	// The slot, created before the sync's position, lets sync return
	// before the holder's session starts: the stand-by must find it held.
	waitFor(t, "the holder to hold the slot", func() bool { return holder.Stats().Active })
	e.sync(t, holder)
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("name = %q", got)
	}
	run(t, standby)

	for i, w := range []struct {
		name string
		inv  *cdc.Invalidator
	}{
		{"a process that never runs the Invalidator", newInvalidator(t, e.dsn, e.slot)},
		{"a process that stands by", standby},
	} {
		name := []string{"Ada Lovelace", "Countess"}[i]
		e.exec(t, "UPDATE users SET name = ? WHERE id = 1", name)
		wctx, cancel := context.WithTimeout(ctx, patience)
		err := w.inv.Wait(wctx, e.currentLSN(t))
		cancel()
		if err != nil {
			t.Fatalf("%s: Wait: %v (holder %+v)", w.name, err, holder.Stats())
		}
		if w.inv.Stats().Active {
			t.Fatalf("%s holds the slot: the test does not test what it says", w.name)
		}
		if got := e.name(t, 1); got != name {
			t.Errorf("%s: after Wait: name = %q, want %q", w.name, got, name)
		}
	}

	// The rule off: no message, no report, no return. A recovery gate
	// calling CatchUp (after a Redis call that failed under load, at any
	// time in the window) would make the holder report: the window starts
	// with reads open, and the gates of the holder and the stand-by
	// removed.
	rctx, rcancel := context.WithTimeout(ctx, patience)
	defer rcancel()
	if err := e.cache.WaitRecovered(rctx); err != nil {
		t.Fatalf("wait for the recovery gate: %v", err)
	}
	cdc.NoRecoveryGate(holder)
	cdc.NoRecoveryGate(standby)
	// The holder may still report for a reason outside the test (a
	// keepalive the server sends while other tests write to it, a timer
	// late on a loaded machine): a window in which Wait returned is void,
	// and the test fails only if each of three did.
	off := newInvalidator(t, e.dsn, e.slot)
	cdc.NoWaitMessage(off)
	for range 3 {
		e.exec(t, "UPDATE users SET name = 'Ada' WHERE id = 1")
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		err = off.Wait(short, e.currentLSN(t))
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return
		}
	}
	t.Errorf("Wait without its message = %v in three windows, want DeadlineExceeded (the holder reported anyway: the test shows nothing; recovering %v, holder %+v)",
		err, e.cache.Recovering(), holder.Stats())
}

// newInvalidator returns an Invalidator of slot with no target, for a
// process that only waits.
func newInvalidator(t *testing.T, dsn, slot string) *cdc.Invalidator {
	t.Helper()
	inv, err := cdc.New(dsn, &cdc.Options{Slot: slot})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// sep is what joins another parameter to the URL dsn.
func sep(dsn string) string {
	if strings.Contains(dsn, "?") {
		return "&"
	}
	return "?"
}
