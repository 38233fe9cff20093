package cdc

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/asidekit/asidekit/internal/backoff"
)

// A COMMIT is written to the WAL, and so decoded and streamed, before the
// transaction becomes visible to other sessions: for a moment on any
// server, and until the standby confirms with synchronous replication. A
// reader that missed in that window would reload the old row after the
// invalidation and cache it under the new version token, for the whole
// TTL. So the applier applies a transaction only once it is visible to a
// new snapshot: it compares the transaction's id with a snapshot of the
// server (txid_current_snapshot()), taken again only when a transaction is
// newer than the last one or still running in it. Under a steady stream
// one snapshot query covers every transaction committed before it.

// visibility answers whether decoded transactions are visible yet, on a
// connection of its own (the replication connection cannot run queries
// while it streams).
type visibility struct {
	dsn  string
	conn *pgx.Conn // opened on first use; nil after close

	have       bool     // a snapshot was taken
	xmin, xmax uint64   // of the last snapshot (64-bit transaction ids)
	xip        []uint64 // running in it, sorted
}

// visible reports whether transaction xid (32 bits, as pgoutput sends it)
// is visible in the last snapshot.
func (v *visibility) visible(xid uint32) bool {
	if !v.have {
		return false
	}
	full := widen(xid, v.xmax)
	if full < v.xmin {
		return true
	}
	if full >= v.xmax {
		return false
	}
	_, running := slices.BinarySearch(v.xip, full)
	return !running
}

// widen returns the 64-bit id of xid, a transaction that is not newer
// than xmax by more than 2^31 (the server keeps them far closer).
func widen(xid uint32, xmax uint64) uint64 {
	full := xmax&^0xFFFFFFFF | uint64(xid)
	if full > xmax && full-xmax > 1<<31 && full >= 1<<32 {
		full -= 1 << 32 // from the previous epoch
	}
	return full
}

// refresh takes a new snapshot.
func (v *visibility) refresh(ctx context.Context) error {
	if v.conn == nil {
		conn, err := pgx.Connect(ctx, v.dsn)
		if err != nil {
			return fmt.Errorf("cdc: visibility connection: %w", err)
		}
		v.conn = conn
	}
	var xmin, xmax int64
	var xip []int64
	err := v.conn.QueryRow(ctx, `SELECT txid_snapshot_xmin(s), txid_snapshot_xmax(s),
		COALESCE(array(SELECT txid_snapshot_xip(s) ORDER BY 1), '{}')
		FROM txid_current_snapshot() AS s`).Scan(&xmin, &xmax, &xip)
	if err != nil {
		v.close()
		return fmt.Errorf("cdc: snapshot: %w", err)
	}
	v.have, v.xmin, v.xmax = true, uint64(xmin), uint64(xmax)
	v.xip = v.xip[:0]
	for _, x := range xip {
		v.xip = append(v.xip, uint64(x))
	}
	return nil
}

// maxVisiblePoll bounds the pause between two snapshots while the applier
// waits for a transaction to become visible, and so how late it sees it:
// every write decoded meanwhile waits behind it. A wait for a synchronous
// standby lasts as long as the standby takes; polling every 5 ms costs at
// most 200 one-row queries a second while it does.
const maxVisiblePoll = 5 * time.Millisecond

// wait returns once xid is visible to a new snapshot, or ctx ends;
// onInvisible, if set, runs each time a snapshot shows xid invisible.
func (v *visibility) wait(ctx context.Context, xid uint32, onInvisible func()) error {
	b := backoff.New(time.Millisecond, maxVisiblePoll)
	for {
		if err := v.refresh(ctx); err != nil {
			return err
		}
		if v.visible(xid) {
			return nil
		}
		if onInvisible != nil {
			onInvisible()
		}
		if err := b.Wait(ctx); err != nil {
			return err
		}
	}
}

func (v *visibility) close() {
	if v.conn != nil {
		_ = v.conn.Close(context.Background())
		v.conn = nil
	}
}
