package cdc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// waitPrefix names the logical decoding message that Wait writes to the
// log when this process does not hold the slot. The holder, reading it,
// applies what came before it, counts the message's position as applied
// and reports that to the server at once, so that the slot's confirmed
// position, which every process can read, passes the Wait's target
// within a few polls instead of at the holder's next regular report
// (StatusInterval), or at the server's next keepalive when nothing is
// written. The message's content is the slot's name: the holders of other
// slots pass it by.
const waitPrefix = "asidekit_wait"

// slotPoll is how often a process whose Wait calls wait for another
// process's Invalidator reads the slot's confirmed position.
const slotPoll = 10 * time.Millisecond

// Wait returns once every transaction that committed before lsn (from
// Position, or pg_current_wal_lsn() after a write) has been applied to
// the cache, or ctx is done: applied by this process when it holds the
// slot, and otherwise by the process that does (the slot's confirmed
// position moves only over applied transactions). So it works in every
// process of a service, those that stand by and those that never call
// Run included. It is the barrier for reading an out-of-band write
// through the cache.
//
// In the process that holds the slot a Wait costs nothing but the wait.
// In another, the process's Waits share one connection to the database,
// held while any is in progress: each new target writes a short message
// to the log (pg_logical_emit_message, PostgreSQL 14 or later; without
// it the wait lasts until the holder's next report, StatusInterval), and
// the slot's position is read every 10 ms.
func (inv *Invalidator) Wait(ctx context.Context, lsn LSN) error {
	inv.waiters.Add(1)
	defer inv.waiters.Add(-1)
	var leave func()
	defer func() {
		if leave != nil {
			leave()
		}
	}()
	for {
		inv.waitMu.Lock()
		ch := inv.advance
		inv.waitMu.Unlock()
		if inv.reached(lsn) {
			return nil
		}
		if leave == nil && !inv.ctr.active.Load() {
			leave = inv.watch.join(inv, lsn)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// reached reports whether every transaction that committed before lsn is
// applied, by this process or by the slot's holder.
func (inv *Invalidator) reached(lsn LSN) bool {
	return LSN(inv.ctr.applied.Load()) >= lsn || LSN(inv.watch.pos.Load()) >= lsn
}

// setApplied records that everything up to lsn is applied.
func (inv *Invalidator) setApplied(lsn LSN) {
	if LSN(inv.ctr.applied.Load()) >= lsn {
		return
	}
	inv.ctr.applied.Store(uint64(lsn))
	inv.wake()
}

// wake makes every Wait call look again.
func (inv *Invalidator) wake() {
	inv.waitMu.Lock()
	close(inv.advance)
	inv.advance = make(chan struct{})
	inv.waitMu.Unlock()
}

// slotWatch follows the slot's confirmed position for the Wait calls made
// while this process does not hold the slot: one goroutine and one
// connection, while any such call is in progress.
type slotWatch struct {
	pos atomic.Uint64 // the slot's confirmed_flush_lsn, as last read

	mu      sync.Mutex // guards the rest
	users   int        // Wait calls that joined and have not left
	want    LSN        // the highest target among them
	running bool       // the goroutine runs
}

// join adds a Wait call for lsn, starting the goroutine if it does not
// run; leave takes the call away again.
func (w *slotWatch) join(inv *Invalidator, lsn LSN) (leave func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.users++
	w.want = max(w.want, lsn)
	if !w.running {
		w.running = true
		go inv.watchSlot()
	}
	return func() {
		w.mu.Lock()
		w.users--
		w.mu.Unlock()
	}
}

// target returns the highest target of the calls in progress; false, when
// none is left, ends the goroutine.
func (w *slotWatch) target() (LSN, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.users == 0 {
		w.running, w.want = false, 0
		return 0, false
	}
	return w.want, true
}

// slotQueryTimeout bounds each of watchSlot's statements and connection
// attempts.
const slotQueryTimeout = 5 * time.Second

// watchSlot reads the slot's confirmed position every slotPoll while Wait
// calls need it, waking them when it moves, and writes a wait message
// for each target higher than those it wrote one for. A failure (the
// database unreachable) closes the connection; the next round opens
// another.
func (inv *Invalidator) watchSlot() {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	var asked LSN // the highest target a message was written for
	for {
		want, ok := inv.watch.target()
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), slotQueryTimeout)
		var err error
		if conn == nil {
			conn, err = pgx.Connect(ctx, inv.dsn)
		}
		if err == nil && want > asked && !inv.noWaitMessage {
			// Once per target: a server that refuses the message
			// (before PostgreSQL 14, or no right to it) still has
			// the regular reports.
			asked = want
			_, err = conn.Exec(ctx, "SELECT pg_logical_emit_message(false, $1::text, $2::text)", waitPrefix, inv.o.Slot)
		}
		if err == nil {
			var confirmed *string
			err = conn.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1",
				inv.o.Slot).Scan(&confirmed)
			if errors.Is(err, pgx.ErrNoRows) {
				err = nil
			}
			var lsn LSN
			if confirmed != nil && lsn.Scan(*confirmed) == nil && uint64(lsn) > inv.watch.pos.Load() {
				inv.watch.pos.Store(uint64(lsn))
				inv.wake()
			}
		}
		cancel()
		if err != nil && conn != nil && conn.IsClosed() {
			conn = nil
		}
		time.Sleep(slotPoll)
	}
}
