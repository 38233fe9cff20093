package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/asidekit/asidekit/repo"
)

// errSlotBusy is a session's end when another process holds the slot.
var errSlotBusy = errors.New("cdc: slot held by another process")

// waitPoll is how often the server is asked for its position while a Wait
// call is in progress and no change arrives.
const waitPoll = 20 * time.Millisecond

// stream is one session holding the slot.
type stream struct {
	inv  *Invalidator
	conn *pgconn.PgConn
	rels map[uint32]*relation

	set      repo.ChangeSet
	inTxn    bool
	commitAt time.Time // of the transaction being received
	truncs   []Target  // truncated in the transaction being received
	changes  uint64    // row changes of the transaction being received

	nextStatus time.Time
}

// session sets up, takes the slot and streams until an error or ctx ends;
// held reports whether it held the slot.
func (inv *Invalidator) session(ctx context.Context) (held bool, err error) {
	if err := inv.Setup(ctx); err != nil {
		return false, err
	}
	conn, err := pgconn.ConnectConfig(ctx, inv.repl)
	if err != nil {
		return false, fmt.Errorf("cdc: replication connection: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = pglogrepl.StartReplication(ctx, conn, inv.o.Slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + inv.o.Publication + "'"},
	})
	if isCode(err, "55006") { // object_in_use: another walsender has it
		return false, errSlotBusy
	}
	if err != nil {
		return false, fmt.Errorf("cdc: start replication: %w", err)
	}
	inv.ctr.active.Store(true)
	defer inv.ctr.active.Store(false)
	inv.mu.Lock()
	tables := inv.tables
	inv.mu.Unlock()
	stop := inv.probeServer(ctx)
	defer stop()
	s := &stream{inv: inv, conn: conn, rels: map[uint32]*relation{}}
	return true, s.run(ctx, tables)
}

func (s *stream) run(ctx context.Context, tables map[string]Target) error {
	inv := s.inv
	s.nextStatus = time.Now().Add(inv.o.StatusInterval)
	for {
		if !time.Now().Before(s.nextStatus) {
			if err := s.status(false); err != nil {
				return err
			}
		}
		// Wait for a message until the next status is due (at least
		// waitPoll; sooner while a Wait call is in progress). Silence
		// between transactions asks the server for its position: its
		// keepalive moves Applied past WAL that holds nothing for us.
		wait := time.Until(s.nextStatus)
		if inv.waiters.Load() > 0 && !s.inTxn {
			wait = min(wait, waitPoll)
		}
		rctx, cancel := context.WithTimeout(ctx, max(wait, waitPoll))
		raw, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && pgconn.Timeout(err) {
				if err := s.status(!s.inTxn); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("cdc: receive: %w", err)
		}
		switch msg := raw.(type) {
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("cdc: replication: %w", pgconn.ErrorResponseToPgError(msg))
		case *pgproto3.CopyData:
			if err := s.copyData(ctx, msg.Data, tables); err != nil {
				return err
			}
		}
	}
}

// copyData handles one message of the replication stream.
func (s *stream) copyData(ctx context.Context, data []byte, tables map[string]Target) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("cdc: keepalive: %w", err)
		}
		s.serverAt(k.ServerWALEnd)
		if !s.inTxn {
			// Every transaction that committed before the server's
			// position has been received, and applied.
			s.inv.setApplied(k.ServerWALEnd)
		}
		if k.ReplyRequested {
			return s.status(false)
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("cdc: xlogdata: %w", err)
		}
		s.serverAt(x.ServerWALEnd)
		msg, err := pglogrepl.Parse(x.WALData)
		if err != nil {
			// Not a message of the protocol version asked for: reading it
			// again would fail again, so it is counted and passed.
			s.inv.ctr.fail(fmt.Errorf("%w: decode at %s: %w", ErrSkipped, x.WALStart, err), true)
			return nil
		}
		return s.message(ctx, msg, tables)
	}
	return nil
}

func (s *stream) serverAt(end LSN) {
	if uint64(end) > s.inv.ctr.serverEnd.Load() {
		s.inv.ctr.serverEnd.Store(uint64(end))
	}
}

// message handles one pgoutput message.
func (s *stream) message(ctx context.Context, msg pglogrepl.Message, tables map[string]Target) error {
	inv := s.inv
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		s.rels[m.RelationID] = newRelation(m, tables)
	case *pglogrepl.BeginMessage:
		s.inTxn, s.commitAt, s.changes = true, m.CommitTime, 0
		inv.ctr.behindSince.Store(m.CommitTime.UnixNano())
	case *pglogrepl.InsertMessage:
		return s.change(ctx, m.RelationID, msg)
	case *pglogrepl.UpdateMessage:
		return s.change(ctx, m.RelationID, msg)
	case *pglogrepl.DeleteMessage:
		return s.change(ctx, m.RelationID, msg)
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if r := s.rels[id]; r != nil && r.target != nil {
				s.truncs = append(s.truncs, r.target)
			}
		}
	case *pglogrepl.CommitMessage:
		return s.commit(ctx, m.TransactionEndLSN)
	}
	return nil
}

// change queues the upkeep of a row change, applying the queue when full.
func (s *stream) change(ctx context.Context, rel uint32, msg pglogrepl.Message) error {
	r := s.rels[rel]
	if r == nil || r.target == nil {
		name := fmt.Sprint("relation ", rel)
		if r != nil {
			name = r.name
		}
		s.inv.ctr.fail(fmt.Errorf("%w: %s is not registered", ErrSkipped, name), true)
		return nil
	}
	ch, err := r.change(msg)
	if err == nil {
		err = r.target.AddChange(&s.set, ch)
	}
	if err != nil {
		s.inv.ctr.fail(fmt.Errorf("%w: %s: %w", ErrSkipped, r.name, err), true)
		return nil
	}
	s.changes++
	if s.set.Len() >= s.inv.o.BatchSize {
		return s.flush(ctx)
	}
	return nil
}

// flush applies the queued upkeep, retrying until Redis takes it.
func (s *stream) flush(ctx context.Context) error {
	if s.set.Len() == 0 {
		return nil
	}
	if err := s.retry(ctx, s.set.Run); err != nil {
		return err
	}
	s.set.Reset()
	return nil
}

// commit applies what is left of the transaction, then counts its
// position as applied.
func (s *stream) commit(ctx context.Context, end LSN) error {
	inv := s.inv
	if err := s.flush(ctx); err != nil {
		return err
	}
	for len(s.truncs) > 0 {
		t := s.truncs[0]
		if err := s.retry(ctx, t.InvalidateAll); err != nil {
			return err
		}
		s.truncs = s.truncs[1:]
		s.changes++
	}
	if inv.afterApply != nil {
		if err := inv.afterApply(end); err != nil {
			return err
		}
	}
	inv.ctr.txns.Add(1)
	inv.ctr.changes.Add(s.changes)
	s.inTxn = false
	inv.ctr.behindSince.Store(0)
	inv.setApplied(end)
	if !time.Now().Before(s.nextStatus) {
		return s.status(false)
	}
	return nil
}

// retry runs fn until it succeeds or ctx ends, with exponential backoff
// up to MaxBackoff, counting each failure. Meanwhile the server keeps
// hearing the (unchanged) applied position, so that it does not time the
// connection out.
func (s *stream) retry(ctx context.Context, fn func(context.Context) error) error {
	backoff := minBackoff
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.inv.ctr.fail(err, false)
		if err := s.status(false); err != nil {
			return err
		}
		if !sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, s.inv.o.MaxBackoff)
	}
}

// status reports the applied position to the server: written, flushed and
// applied alike, since nothing is applied before it is done.
func (s *stream) status(reply bool) error {
	pos := LSN(s.inv.ctr.applied.Load())
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: pos,
		ReplyRequested:   reply,
	})
	if err != nil {
		return fmt.Errorf("cdc: status update: %w", err)
	}
	s.nextStatus = time.Now().Add(s.inv.o.StatusInterval)
	return nil
}
