package cdc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo/cdc"
)

// A service restart: rows changed with plain SQL while no process ran the
// Invalidator are cached with their old values; once CatchUp returns, in
// the process that holds the slot and in one that stands by, none is.
func TestInvalidator_CatchUp_afterRestart(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	ctx := context.Background()
	e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	if err := e.users.WarmFilter(ctx); err != nil {
		t.Fatal(err)
	}
	first := e.invalidator(t, cdc.Options{})
	stop := run(t, first)
	e.sync(t, first)
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("name = %q", got)
	}
	stop() // the service stops

	e.exec(t, "UPDATE users SET name = 'Ada Lovelace' WHERE id = 1")
	if got := e.name(t, 1); got != "Ada" {
		t.Fatalf("with no Invalidator running the cached row changed: %q", got)
	}

	// The service starts again: one process holds the slot, another
	// stands by; both wait for CatchUp before they read.
	holder, standby := e.invalidator(t, cdc.Options{}), e.invalidator(t, cdc.Options{StandbyRetry: time.Hour})
	run(t, holder)
	cctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	if err := holder.CatchUp(cctx); err != nil {
		t.Fatalf("CatchUp (holder): %v", err)
	}
	if got := e.name(t, 1); got != "Ada Lovelace" {
		t.Errorf("after CatchUp: name = %q, want Ada Lovelace", got)
	}
	run(t, standby)
	e.exec(t, "UPDATE users SET name = 'Countess' WHERE id = 1")
	if err := standby.CatchUp(cctx); err != nil {
		t.Fatalf("CatchUp (stand-by): %v (stats %+v)", err, standby.Stats())
	}
	if standby.Stats().Active {
		t.Fatal("the stand-by holds the slot: the test does not test what it says")
	}
	if got := e.name(t, 1); got != "Countess" {
		t.Errorf("after the stand-by's CatchUp: name = %q, want Countess", got)
	}

	// Nobody applying: CatchUp gives up with ctx.
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	idle := e.invalidator(t, cdc.Options{Slot: "test_idle_" + e.slot[5:]})
	if err := idle.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	e.exec(t, "UPDATE users SET name = 'Ada' WHERE id = 1")
	if err := idle.CatchUp(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("CatchUp with no process applying = %v, want DeadlineExceeded", err)
	}
}
