package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
// the one that does (see Wait: Position, then Wait). It
// is the readiness check of a service that starts with the Invalidator:
// rows changed while the service was down are still cached with their
// old values until the log up to the start has been applied, so call it
// (with a deadline) after starting Run and before serving reads. It
// returns ctx's error if ctx ends first, for instance when no process
// runs the Invalidator.
func (inv *Invalidator) CatchUp(ctx context.Context) error {
	target, err := inv.Position(ctx)
	if err != nil {
		return ctxErr(ctx, err)
	}
	return inv.Wait(ctx, target)
}

// ctxErr makes err match ctx's error when ctx has ended: a dial or a
// query cut short by a deadline reports "i/o timeout", which callers
// could not tell from a server that does not answer. A deadline that has
// passed counts as ended even before ctx says so: the connection's own
// timer, set to the same deadline, may fire before the context's.
func ctxErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	if dl, ok := ctx.Deadline(); cerr == nil && ok && !time.Now().Before(dl) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}
