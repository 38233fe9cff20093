package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/asidekit/asidekit/internal/backoff"
)

// Position returns the database's current write-ahead log position
// (pg_current_wal_lsn()): every transaction that committed before the
// call ends at or before it. Pass it to Wait to read a write made
// elsewhere through the cache.
func (inv *Invalidator) Position(ctx context.Context) (LSN, error) {
	conn, err := pgx.Connect(ctx, inv.dsn)
	if err != nil {
		return 0, ctxErr(ctx, fmt.Errorf("cdc: connect: %w", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return position(ctx, conn)
}

func position(ctx context.Context, conn *pgx.Conn) (LSN, error) {
	var s string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&s); err != nil {
		return 0, fmt.Errorf("cdc: current WAL position: %w", err)
	}
	var lsn LSN
	if err := lsn.Scan(s); err != nil {
		return 0, fmt.Errorf("cdc: current WAL position %q: %w", s, err)
	}
	return lsn, nil
}

// CatchUp returns once every transaction committed before the call has
// been applied to the cache: by this process when it holds the slot, or by
// the one that does (the slot's confirmed position moves only over
// applied transactions; the holder reports it every StatusInterval). It
// is the readiness check of a service that starts with the Invalidator:
// rows changed while the service was down are still cached with their
// old values until the log up to the start has been applied, so call it
// (with a deadline) after starting Run and before serving reads. It
// returns ctx's error if ctx ends first, for instance when no process
// runs the Invalidator.
func (inv *Invalidator) CatchUp(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, inv.dsn)
	if err != nil {
		return ctxErr(ctx, fmt.Errorf("cdc: connect: %w", err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	target, err := position(ctx, conn)
	if err != nil {
		return ctxErr(ctx, err)
	}
	b := backoff.New(10*time.Millisecond, 200*time.Millisecond)
	for {
		if LSN(inv.ctr.applied.Load()) >= target {
			return nil
		}
		var confirmed *string
		err := conn.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1",
			inv.o.Slot).Scan(&confirmed)
		if err != nil && err != pgx.ErrNoRows {
			return ctxErr(ctx, fmt.Errorf("cdc: slot position: %w", err))
		}
		if confirmed != nil {
			var lsn LSN
			if err := lsn.Scan(*confirmed); err == nil && lsn >= target {
				return nil
			}
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
	}
}

// ctxErr makes err match ctx's error when ctx has ended: a dial or a
// query cut short by a deadline reports "i/o timeout", which callers
// could not tell from a server that does not answer.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}
