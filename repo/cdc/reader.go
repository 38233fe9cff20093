package cdc

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

const (
	// readAhead is how many decoded messages the reader may hold for the
	// applier: it bounds memory, and lets the applier see that more
	// transactions are waiting.
	readAhead = 1024
	// waitPoll is how often the server is asked for its position while a
	// Wait call is in progress and no change arrives.
	waitPoll = 20 * time.Millisecond
)

// item is a decoded pgoutput message, or a keepalive's server position.
type item struct {
	msg       pglogrepl.Message
	keepalive LSN
	undecoded error // a message that does not parse (see applier.unparsed)
}

// reader owns the replication connection: it decodes messages for the
// applier and reports the applied position to the server every
// StatusInterval, also while the applier waits for Redis, so that the
// server does not time the connection out.
type reader struct {
	inv   *Invalidator
	conn  *pgconn.PgConn
	items chan item
	err   error // why run ended, when ctx did not end it

	nextStatus time.Time
	deadline   time.Time // of the connection's reads (see receive)
	// waitMsg: another process's Wait message was passed to the applier
	// and its position is not reported yet; the reader looks for the
	// applier's reportSoon every waitPoll meanwhile.
	waitMsg bool
}

func (r *reader) run(ctx context.Context) {
	defer close(r.items)
	// ctx ending stops a read in progress (see receive).
	stop := context.AfterFunc(ctx, func() { _ = r.conn.Conn().SetReadDeadline(time.Now()) })
	defer stop()
	r.nextStatus = time.Now().Add(r.inv.o.StatusInterval)
	for ctx.Err() == nil {
		if !time.Now().Before(r.nextStatus) || r.inv.reportSoon.Swap(false) {
			r.waitMsg = false
			if r.err = r.status(false); r.err != nil {
				return
			}
		}
		// Wait for a message until the next status is due (sooner while a
		// Wait call is in progress). Silence asks the server for its
		// position: its keepalive moves Applied past WAL that holds
		// nothing for us.
		wait := time.Until(r.nextStatus)
		if r.inv.waiters.Load() > 0 || r.waitMsg {
			wait = min(wait, waitPoll)
		}
		raw, err := r.receive(ctx, max(wait, waitPoll))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && pgconn.Timeout(err):
			if r.err = r.status(true); r.err != nil {
				return
			}
			continue
		case err != nil:
			r.err = fmt.Errorf("cdc: receive: %w", err)
			return
		}
		switch msg := raw.(type) {
		case *pgproto3.ErrorResponse:
			r.err = fmt.Errorf("cdc: replication: %w", pgconn.ErrorResponseToPgError(msg))
			return
		case *pgproto3.CopyData:
			if r.err = r.copyData(ctx, msg.Data); r.err != nil {
				return
			}
		}
	}
}

// receive returns the next message of the stream, or a timeout error
// (pgconn.Timeout) when none came within wait. It sets a deadline on the
// connection's reads rather than giving ReceiveMessage a context with a
// timeout: that costs a context, a timer and a watch of it per message,
// about a tenth of the process's CPU when a big transaction streams in.
// The deadline moves only when it must come sooner or has passed; one
// that an earlier call left and that passes before this call's wait is
// over is not a timeout of this call: it reads again. ctx ending sets the
// deadline to now (run's AfterFunc), and is checked after each set, so
// that a deadline set later cannot undo that.
func (r *reader) receive(ctx context.Context, wait time.Duration) (pgproto3.BackendMessage, error) {
	want := time.Now().Add(wait)
	for {
		if now := time.Now(); !r.deadline.After(now) || want.Before(r.deadline) {
			if err := r.conn.Conn().SetReadDeadline(want); err != nil {
				return nil, err
			}
			r.deadline = want
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		msg, err := r.conn.ReceiveMessage(context.Background())
		if err != nil && pgconn.Timeout(err) && time.Now().Before(want) && ctx.Err() == nil {
			continue // an earlier call's deadline passed, not this call's wait
		}
		return msg, err
	}
}

// copyData handles one message of the replication stream.
func (r *reader) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("cdc: keepalive: %w", err)
		}
		r.serverAt(k.ServerWALEnd)
		if err := r.send(ctx, item{keepalive: k.ServerWALEnd}); err != nil {
			return err
		}
		if k.ReplyRequested {
			return r.status(false)
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("cdc: xlogdata: %w", err)
		}
		r.serverAt(x.ServerWALEnd)
		msg, ok, err := parseRowChange(x.WALData)
		if !ok {
			msg, err = pglogrepl.Parse(x.WALData)
		}
		if err != nil {
			// Not a message of the protocol version asked for: reading it
			// again would fail again. It may be a change of any table: the
			// applier invalidates them all.
			return r.send(ctx, item{undecoded: fmt.Errorf("%w: decode at %s: %w", ErrUndecoded, x.WALStart, err)})
		}
		if m, ok := msg.(*pglogrepl.LogicalDecodingMessage); ok {
			// Its content points into the connection's read buffer, which
			// the next receive reuses (tuple data is copied by the
			// decoders).
			m.Content = bytes.Clone(m.Content)
			r.waitMsg = r.waitMsg || m.Prefix == waitPrefix && string(m.Content) == r.inv.o.Slot
		}
		return r.send(ctx, item{msg: msg})
	}
	return nil
}

// send hands it to the applier, reporting the position while it waits.
func (r *reader) send(ctx context.Context, it item) error {
	select {
	case r.items <- it: // the applier keeps up: no timer
		return nil
	default:
	}
	for {
		t := time.NewTimer(max(time.Until(r.nextStatus), waitPoll))
		select {
		case r.items <- it:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
			if err := r.status(false); err != nil {
				return err
			}
		}
	}
}

func (r *reader) serverAt(end LSN) {
	if uint64(end) > r.inv.ctr.serverEnd.Load() {
		r.inv.ctr.serverEnd.Store(uint64(end))
	}
}

// status reports the applied position to the server: written, flushed and
// applied alike, since nothing counts as applied before it is done.
func (r *reader) status(reply bool) error {
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), r.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: LSN(r.inv.ctr.applied.Load()),
		ReplyRequested:   reply,
	})
	if err != nil {
		return fmt.Errorf("cdc: status update: %w", err)
	}
	r.nextStatus = time.Now().Add(r.inv.o.StatusInterval)
	return nil
}
