package cdc

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// invalidateAllPrefix is the prefix of the logical decoding message that a
// recreated slot starts with: its content is the slot's name, and the
// process that holds the slot invalidates every registered repository when
// it applies it.
const invalidateAllPrefix = "asidekit_cdc.invalidate_all"

// pgMessages is the first server version (server_version_num) whose
// pgoutput passes logical decoding messages on (its "messages" option).
const pgMessages = 140000

// slotState is a slot's row of pg_replication_slots.
type slotState struct {
	exists     bool
	db, plugin string
	// lost: PostgreSQL invalidated the slot (wal_status 'lost', PostgreSQL
	// 13 and later; or an invalidation_reason, 17 and later); it can no
	// longer stream.
	lost bool
}

// readSlot reads the state of slot. The columns of versions that have them
// are read through to_jsonb, so one query serves every version.
func readSlot(ctx context.Context, conn *pgx.Conn, slot string) (slotState, error) {
	st := slotState{exists: true}
	var walStatus, reason string
	err := conn.QueryRow(ctx, `
		SELECT coalesce(database, ''), coalesce(plugin, ''),
		       coalesce(to_jsonb(s)->>'wal_status', ''), coalesce(to_jsonb(s)->>'invalidation_reason', '')
		FROM pg_replication_slots s WHERE slot_name = $1`, slot).Scan(&st.db, &st.plugin, &walStatus, &reason)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return slotState{}, nil
	case err != nil:
		return st, fmt.Errorf("cdc: slot %s: %w", slot, err)
	}
	st.lost = walStatus == "lost" || reason != ""
	return st, nil
}

// ensureSlot creates the logical replication slot unless it exists, and
// replaces it when PostgreSQL has invalidated it. Creating and replacing
// run under an advisory lock of the slot's name, so that of processes
// racing, one acts and the others find the new slot, which they leave
// alone.
func (inv *Invalidator) ensureSlot(ctx context.Context, conn *pgx.Conn, targets []table) error {
	slot := inv.o.Slot
	st, err := readSlot(ctx, conn, slot)
	if err != nil {
		return err
	}
	if st.exists && !st.lost {
		return checkSlot(ctx, conn, slot, st)
	}
	key := "asidekit_cdc.slot:" + slot
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(hashtext($1))", key); err != nil {
		return fmt.Errorf("cdc: slot %s: lock: %w", slot, err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext($1))", key) }()
	if st, err = readSlot(ctx, conn, slot); err != nil { // again, under the lock
		return err
	}
	switch {
	case !st.exists:
		_, err = conn.Exec(ctx, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
		if err == nil || isCode(err, "42710") { // or a process without the lock created it
			return nil
		}
		return fmt.Errorf("cdc: create slot %s: %w", slot, err)
	case !st.lost:
		return checkSlot(ctx, conn, slot, st) // another process replaced it
	}
	if err := checkSlot(ctx, conn, slot, st); err != nil {
		return err // not ours to drop
	}
	return inv.recreateSlot(ctx, conn, targets)
}

// recreateSlot drops the lost slot and creates it anew. The changes in the
// WAL it lost are gone, so every cached row may be stale: the new slot's
// stream starts with a message (in the transaction that created the slot)
// on which the slot's holder invalidates every registered repository and
// warms its Bloom filters (inserts were lost too), before it applies any
// later change; a holder that dies first leaves it
// for the next. Before PostgreSQL 14 pgoutput cannot pass messages on, and
// this process invalidates them itself, after creating the slot.
func (inv *Invalidator) recreateSlot(ctx context.Context, conn *pgx.Conn, targets []table) error {
	slot := inv.o.Slot
	_, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot)
	if isCode(err, "55006") {
		return fmt.Errorf("%w: lost slot %s: %w", ErrSlotActive, slot, err)
	}
	if err != nil {
		return fmt.Errorf("cdc: drop lost slot %s: %w", slot, err)
	}
	// Slot and message names are restricted to [a-z0-9_] (Options), so
	// they are safe within quotes. One simple query, one transaction: the
	// slot never exists without its message.
	create := "SELECT pg_create_logical_replication_slot('" + slot + "', 'pgoutput')"
	messages := inv.pgVersion.Load() >= pgMessages
	if messages {
		create += "; SELECT pg_logical_emit_message(true, '" + invalidateAllPrefix + "', '" + slot + "')"
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		return fmt.Errorf("cdc: recreate lost slot %s: %w", slot, err)
	}
	inv.ctr.slotsRecreated.Add(1)
	if !messages {
		for _, t := range targets {
			if err := inv.retry(ctx, t.InvalidateAll); err != nil {
				return err
			}
			if err := inv.retry(ctx, t.RebuildFilter); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSlot reports a slot of another database or plugin, which is not the
// Invalidator's.
func checkSlot(ctx context.Context, conn *pgx.Conn, slot string, st slotState) error {
	var cur string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&cur); err != nil {
		return fmt.Errorf("cdc: slot %s: %w", slot, err)
	}
	if st.db != cur || st.plugin != "pgoutput" {
		return fmt.Errorf("%w: slot %s exists for database %q with plugin %q, not %q with pgoutput", ErrInvalid, slot, st.db, st.plugin, cur)
	}
	return nil
}

// slotLost reports whether PostgreSQL has invalidated the slot, as far as
// a fresh connection can tell.
func (inv *Invalidator) slotLost(ctx context.Context) bool {
	conn, err := pgx.Connect(ctx, inv.dsn)
	if err != nil {
		return false
	}
	defer conn.Close(context.WithoutCancel(ctx))
	st, err := readSlot(ctx, conn, inv.o.Slot)
	return err == nil && st.lost
}
