package cdc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Setup creates what the Invalidator needs on the server, idempotently
// (any number of processes may run it at once): the publication over the
// registered tables (adding those it lacks; tables it has beyond them stay),
// then the logical replication slot (pgoutput), which from then on keeps
// every change for the Invalidator, even while no process runs. Run calls
// it; call it earlier to start capturing before the first Run.
//
// A slot that PostgreSQL has invalidated (it fell further behind than
// max_slot_wal_keep_size: wal_status 'lost') is dropped and created anew,
// and every registered repository's cache is invalidated before a change
// from the new slot is applied (see the package documentation, "Lost
// slot"); Stats.SlotsRecreated counts it.
//
// A registered table that is missing, or has neither a primary key nor a
// replica identity, is left out of the publication and counted in
// Stats.BadTables (ErrBadTable in Stats.LastError): publishing it would
// make PostgreSQL refuse UPDATE and DELETE on it. The others proceed.
// A server whose wal_level is not logical is ErrNotLogical.
func (inv *Invalidator) Setup(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, inv.dsn)
	if err != nil {
		return fmt.Errorf("cdc: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var level string
	var version int32
	err = conn.QueryRow(ctx, "SELECT current_setting('wal_level'), current_setting('server_version_num')::int").Scan(&level, &version)
	if err != nil {
		return fmt.Errorf("cdc: wal_level: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("%w (it is %s)", ErrNotLogical, level)
	}
	inv.pgVersion.Store(version)
	inv.mu.Lock()
	targets := append([]table(nil), inv.targets...)
	inv.mu.Unlock()
	tables := make(map[string]table, len(targets))
	var quoted []string
	bad := 0
	for _, t := range targets {
		name, ok, err := checkTable(ctx, conn, t.Table())
		if err != nil {
			return err
		}
		if !ok {
			bad++
			inv.ctr.fail(fmt.Errorf("%w: %s: missing, or no primary key and no replica identity", ErrBadTable, t.Table()), false)
			continue
		}
		tables[name.key()] = t
		quoted = append(quoted, name.quoted())
	}
	inv.ctr.badTables.Store(int64(bad))
	if err := ensurePublication(ctx, conn, inv.o.Publication, quoted); err != nil {
		return err
	}
	if err := inv.ensureSlot(ctx, conn, targets); err != nil {
		return err
	}
	inv.mu.Lock()
	inv.tables = tables
	inv.mu.Unlock()
	return nil
}

// relName is a table's schema and name.
type relName struct{ nsp, rel string }

func (n relName) key() string { return n.nsp + "." + n.rel }

func (n relName) quoted() string { return pgx.Identifier{n.nsp, n.rel}.Sanitize() }

// checkTable resolves table and reports whether it can be published:
// it exists and has a primary key or a replica identity (FULL or an index).
func checkTable(ctx context.Context, conn *pgx.Conn, table string) (relName, bool, error) {
	var n relName
	var ident string
	var pk bool
	err := conn.QueryRow(ctx, `
		SELECT n.nspname, c.relname, c.relreplident::text,
		       EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass($1)`, table).Scan(&n.nsp, &n.rel, &ident, &pk)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return n, false, nil
	case err != nil:
		return n, false, fmt.Errorf("cdc: look up table %s: %w", table, err)
	}
	return n, ident == "f" || ident == "i" || (ident == "d" && pk), nil
}

// ensurePublication creates the publication, or adds the tables it lacks.
func ensurePublication(ctx context.Context, conn *pgx.Conn, pub string, tables []string) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)", pub).Scan(&exists); err != nil {
		return fmt.Errorf("cdc: publication %s: %w", pub, err)
	}
	id := pgx.Identifier{pub}.Sanitize()
	if !exists {
		stmt := "CREATE PUBLICATION " + id
		if len(tables) > 0 {
			stmt += " FOR TABLE " + strings.Join(tables, ", ")
		}
		if _, err := conn.Exec(ctx, stmt); err == nil || !isCode(err, "42710") {
			return wrap(err, "create publication "+pub)
		}
		// Another process created it meanwhile: add what it lacks.
	}
	for _, t := range tables {
		var member bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
			WHERE p.pubname = $1 AND pr.prrelid = $2::regclass)`, pub, t).Scan(&member)
		if err != nil {
			return fmt.Errorf("cdc: publication %s: %w", pub, err)
		}
		if member {
			continue
		}
		if _, err := conn.Exec(ctx, "ALTER PUBLICATION "+id+" ADD TABLE "+t); err != nil && !isCode(err, "42710") {
			return fmt.Errorf("cdc: add %s to publication %s: %w", t, pub, err)
		}
	}
	return nil
}

// Drop removes the slot and the publication, so that the server stops
// keeping WAL for the Invalidator. Nothing else removes them (Setup only
// replaces a slot the server invalidated): a stopped service keeps its
// position. A slot held by a running process is
// ErrSlotActive; stop every process first.
func (inv *Invalidator) Drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, inv.dsn)
	if err != nil {
		return fmt.Errorf("cdc: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", inv.o.Slot)
	switch {
	case isCode(err, "55006"):
		return fmt.Errorf("%w: %s: %w", ErrSlotActive, inv.o.Slot, err)
	case err != nil:
		return fmt.Errorf("cdc: drop slot %s: %w", inv.o.Slot, err)
	}
	_, err = conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{inv.o.Publication}.Sanitize())
	return wrap(err, "drop publication "+inv.o.Publication)
}

// SetReplicaIdentityFull sets REPLICA IDENTITY FULL on every registered
// table, so that the log carries a row's old values on UPDATE and DELETE
// and the Invalidator can drop the GetBy mappings of unique values that
// changed or went away. Without it (the default identity, the primary
// key), those old mappings stay cached until GetBy finds, by checking the
// row, that they no longer match, and drops them then: never a wrong
// row, one extra read. FULL makes every UPDATE and DELETE write the whole
// old row to the WAL.
func (inv *Invalidator) SetReplicaIdentityFull(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, inv.dsn)
	if err != nil {
		return fmt.Errorf("cdc: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	inv.mu.Lock()
	targets := append([]table(nil), inv.targets...)
	inv.mu.Unlock()
	for _, t := range targets {
		name, found, err := checkTable(ctx, conn, t.Table())
		if err != nil {
			return err
		}
		if name.rel == "" && !found {
			return fmt.Errorf("%w: %s: no such table", ErrBadTable, t.Table())
		}
		if _, err := conn.Exec(ctx, "ALTER TABLE "+name.quoted()+" REPLICA IDENTITY FULL"); err != nil {
			return fmt.Errorf("cdc: %s: replica identity full: %w", t.Table(), err)
		}
	}
	return nil
}

// isCode reports whether err is a PostgreSQL error with SQLSTATE code.
func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

func wrap(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("cdc: %s: %w", what, err)
}
