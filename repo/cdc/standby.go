package cdc

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/asidekit/asidekit/internal/backoff"
)

// standBy returns once the slot may be free: when it is not active, when
// it is gone, or when checking fails (the next session's Setup reports
// why). It returns ctx's error once ctx ends.
//
// A stand-by checks pg_replication_slots every StandbyRetry on one
// connection kept for the purpose, instead of trying to take the slot:
// a try costs two new server processes (Setup's connection and a
// walsender), which a fleet of stand-bys retrying every StandbyRetry
// turned into a steady stream of connections that slowed the database
// for every request.
func (inv *Invalidator) standBy(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, inv.dsn)
	if err != nil {
		return backoff.Sleep(ctx, inv.o.StandbyRetry)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for {
		if err := backoff.Sleep(ctx, inv.o.StandbyRetry); err != nil {
			return err
		}
		var active bool
		err := conn.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", inv.o.Slot).Scan(&active)
		if err != nil || !active {
			return ctx.Err()
		}
		inv.ctr.standbyChecks.Add(1)
	}
}
