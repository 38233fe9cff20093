package cdc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/testswitch"
)

var (
	// errSlotBusy is a session's end when another process holds the slot.
	errSlotBusy = errors.New("cdc: slot held by another process")
	// errSlotLost is a session's end when PostgreSQL has invalidated the
	// slot (counted in Stats.Errors): the next session's Setup replaces it.
	errSlotLost = errors.New("cdc: slot invalidated by the server; recreating it")
)

// session sets up, takes the slot and streams until an error or ctx ends;
// held reports whether it held the slot. A reader goroutine owns the
// connection (messages in, status updates out); this goroutine applies.
func (inv *Invalidator) session(ctx context.Context) (held bool, err error) {
	if err := inv.Setup(ctx); err != nil {
		return false, err
	}
	conn, err := pgconn.ConnectConfig(ctx, inv.repl)
	if err != nil {
		return false, fmt.Errorf("cdc: replication connection: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	args := []string{"proto_version '1'", "publication_names '" + inv.o.Publication + "'"}
	if inv.pgVersion.Load() >= pgMessages {
		args = append(args, "messages 'true'") // for a recreated slot's first message
	}
	err = pglogrepl.StartReplication(ctx, conn, inv.o.Slot, 0, pglogrepl.StartReplicationOptions{PluginArgs: args})
	if isCode(err, "55006") { // object_in_use: another walsender has it
		return false, errSlotBusy
	}
	if isCode(err, "55000") && inv.slotLost(ctx) { // "can no longer get changes", "cannot read from"
		return false, fmt.Errorf("%w: %s: %w", errSlotLost, inv.o.Slot, err)
	}
	if err != nil {
		return false, fmt.Errorf("cdc: start replication: %w", err)
	}
	inv.ctr.active.Store(true)
	defer func() {
		inv.ctr.active.Store(false)
		inv.ctr.pending.Store(0) // the next session receives them again
		inv.ctr.pendingDone.Store(0)
		inv.wake() // a Wait that relied on this process now follows the slot
	}()
	inv.mu.Lock()
	tables, targets := inv.tables, append([]table(nil), inv.targets...)
	inv.mu.Unlock()
	stop := inv.probeServer(ctx)
	defer stop()

	ctx, cancel := context.WithCancel(ctx)
	r := &reader{inv: inv, conn: conn, items: make(chan item, readAhead)}
	var wg sync.WaitGroup
	wg.Go(func() { r.run(ctx) })
	a := &applier{inv: inv, rels: map[uint32]*relation{}, tables: tables, targets: targets,
		vis: &visibility{dsn: inv.dsn}, recent: recentRows{limit: max(inv.o.RecentRows, 0)}}
	defer a.vis.close()
	err = a.run(ctx, r.items)
	cancel() // stops the reader if the applier ended first, and a batch's retries
	a.settle()
	wg.Wait()
	if err == nil {
		err = r.err
	}
	return true, err
}

// applier applies the messages the reader decoded, in order. Consecutive
// transactions share one batch while more messages are already waiting
// (group commit): each batch costs a few pipelined round trips, however
// many small transactions it holds, and a transaction counts as applied
// only once its batch is done.
type applier struct {
	inv     *Invalidator
	rels    map[uint32]*relation
	tables  map[string]table
	targets []table // every registered one

	vis     *visibility // of decoded transactions to other sessions
	recent  recentRows  // the rows this session applied, for the old rows the log leaves out
	set     cacheaside.Effects
	sending chan error // the batch flush sent, until settle has its result
	truncs  []table    // truncated in transactions not yet applied
	warms   []table    // to warm after a recreated slot (lost inserts)
	inTxn   bool
	lsn     uint64    // replayed past it, a replica has the open transaction (cacheaside.Effects.SetLSN)
	xid     uint32    // the open transaction's id
	changes uint64    // row changes not yet applied
	txns    uint64    // committed transactions not yet applied
	end     LSN       // end of the last of them
	since   time.Time // when the first of them was received
}

// maxGroupDelay bounds how long a received transaction waits for others to
// share its batch: under a steady stream the reader always holds more, and
// the batch would otherwise fill to BatchSize first.
const maxGroupDelay = 5 * time.Millisecond

func (a *applier) run(ctx context.Context, items <-chan item) error {
	for it := range items {
		var err error
		switch {
		case it.keepalive != 0:
			if !a.inTxn && a.txns == 0 {
				// Every transaction that committed before the server's
				// position has been received, and applied.
				a.inv.setApplied(it.keepalive)
			}
		case it.undecoded != nil:
			err = a.unparsed(ctx, it.undecoded)
		default:
			err = a.message(ctx, it.msg)
		}
		if err == nil && a.txns > 0 && (len(items) == 0 || a.set.Len() >= a.inv.o.BatchSize ||
			time.Since(a.since) >= maxGroupDelay) {
			err = a.apply(ctx)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// message handles one pgoutput message.
func (a *applier) message(ctx context.Context, msg pglogrepl.Message) error {
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		r := newRelation(m, a.tables)
		if !r.sameLayout(a.rels[m.RelationID]) && !testswitch.RecentRowsRelationOff.Load() {
			a.recent.forget(m.RelationID) // its columns changed
		}
		a.rels[m.RelationID] = r
	case *pglogrepl.BeginMessage:
		if err := a.visible(ctx, m.Xid); err != nil {
			return err
		}
		a.inTxn = true
		// FinalLSN is where the transaction's commit record starts; a
		// replay position is the end of a record, so one past it means
		// the commit is replayed.
		a.lsn = uint64(m.FinalLSN) + 1
		a.xid = m.Xid
		a.inv.ctr.behindSince.CompareAndSwap(0, m.CommitTime.UnixNano())
	case *pglogrepl.InsertMessage:
		return a.change(ctx, m.RelationID, msg)
	case *pglogrepl.UpdateMessage:
		return a.change(ctx, m.RelationID, msg)
	case *pglogrepl.DeleteMessage:
		return a.change(ctx, m.RelationID, msg)
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			a.recent.forget(id)
			if r := a.rels[id]; r != nil && r.target != nil {
				a.truncs = append(a.truncs, r.target)
			}
		}
	case *pglogrepl.LogicalDecodingMessage:
		switch {
		case string(m.Content) != a.inv.o.Slot:
		case m.Prefix == invalidateAllPrefix:
			// The slot was recreated (recreateSlot): changes are lost.
			a.recent.forgetAll()
			a.truncs = append(a.truncs, a.targets...)
			a.warms = append(a.warms, a.targets...)
		case m.Prefix == waitPrefix && !m.Transactional && !a.inTxn:
			return a.waited(ctx, m.LSN)
		}
	case *pglogrepl.CommitMessage:
		a.inTxn = false
		if a.txns == 0 {
			a.since = time.Now()
		}
		a.txns++
		a.end = m.TransactionEndLSN
	}
	return nil
}

// waited handles another process's Wait message, written to the log at
// lsn: every transaction that committed before it has been received, so
// once they are applied lsn counts as applied, and the reader reports it
// at once (see waitPrefix).
func (a *applier) waited(ctx context.Context, lsn LSN) error {
	if a.txns > 0 {
		if err := a.apply(ctx); err != nil {
			return err
		}
	}
	a.inv.setApplied(lsn)
	a.inv.reportSoon.Store(true)
	return nil
}

// change queues the upkeep of a row change, flushing the queue when full.
func (a *applier) change(ctx context.Context, rel uint32, msg pglogrepl.Message) error {
	r := a.rels[rel]
	if r == nil || r.target == nil {
		name := fmt.Sprint("relation ", rel)
		if r != nil {
			name = r.name
		}
		a.inv.ctr.fail(fmt.Errorf("%w: %s is not registered", ErrSkipped, name), true)
		return nil
	}
	ch, derr := r.change(msg) // with derr, the columns it could not read are unknown
	if derr == nil {
		a.recent.use(rel, r, &ch) // the old row the log left out, when the session read it
	}
	// A TRUNCATE of the table earlier in the transactions not yet applied:
	// its InvalidateAll, run when they are (apply), drops every key of
	// the table after this change too.
	ch.Covered = slices.Contains(a.truncs, r.target) || testswitch.CoveredAlwaysOn.Load()
	ch.CommitLSN, ch.Xid = a.lsn-1, a.xid
	lost, err := r.target.Queue(&a.set, ch)
	a.set.SetLSN(a.lsn)
	if err != nil {
		a.recent.forget(rel) // the row as remembered was not applied
		a.inv.ctr.fail(fmt.Errorf("%w: %s: %w", ErrSkipped, r.name, err), true)
		return nil
	}
	if derr != nil || len(lost) > 0 {
		a.recent.forget(rel) // a remembered value the table cannot decode
		a.inv.undecoded(r.name, derr, lost)
	}
	a.changes++
	a.inv.ctr.pending.Store(a.changes)
	if a.set.Len() >= a.inv.o.BatchSize {
		return a.flush(ctx)
	}
	return nil
}

// visible returns once transaction xid, whose COMMIT was decoded, is
// visible to other sessions (see visibility), applying the transactions
// received before it first if it must wait.
func (a *applier) visible(ctx context.Context, xid uint32) error {
	if a.inv.ignoreVisibility || a.vis.visible(xid) {
		return nil
	}
	if a.txns > 0 {
		if err := a.apply(ctx); err != nil {
			return err
		}
	}
	return a.vis.wait(ctx, xid, a.inv.onInvisible)
}

// flush sends the queued upkeep to Redis, retrying until Redis takes it,
// in the background: the applier decodes and plans the next batch while
// Redis does this one. The batch before it is done first (settle), so
// batches reach Redis one after the other, in commit order.
func (a *applier) flush(ctx context.Context) error {
	if a.set.Len() == 0 {
		return nil
	}
	if err := a.settle(); err != nil {
		return err
	}
	set, changes, done := a.set, a.changes, make(chan error, 1)
	a.set.Reset()
	a.sending = done
	go func() {
		err := a.inv.retry(ctx, set.Run)
		if err == nil {
			a.inv.ctr.pendingDone.Store(changes) // all received before it are in Redis: a big transaction's progress
		}
		done <- err
	}()
	return nil
}

// settle waits for the batch flush sent, if one is still in Redis, and
// returns its error.
func (a *applier) settle() error {
	if a.sending == nil {
		return nil
	}
	err := <-a.sending
	a.sending = nil
	return err
}

// apply finishes the committed transactions received so far: their
// queued upkeep and truncations, then their position counts as applied.
func (a *applier) apply(ctx context.Context) error {
	inv := a.inv
	if err := a.flush(ctx); err != nil {
		return err
	}
	if err := a.settle(); err != nil {
		return err
	}
	for len(a.truncs) > 0 {
		if err := inv.retry(ctx, a.truncs[0].InvalidateAll); err != nil {
			return err
		}
		a.truncs = a.truncs[1:]
		a.changes++
	}
	for len(a.warms) > 0 {
		if err := inv.retry(ctx, a.warms[0].RebuildFilter); err != nil {
			return err
		}
		a.warms = a.warms[1:]
	}
	if inv.afterApply != nil {
		if err := inv.afterApply(a.end); err != nil {
			return err
		}
	}
	inv.ctr.txns.Add(a.txns)
	inv.ctr.changes.Add(a.changes)
	a.txns, a.changes = 0, 0
	inv.ctr.pending.Store(0)
	inv.ctr.pendingDone.Store(0)
	if !a.inTxn {
		inv.ctr.behindSince.Store(0)
	}
	inv.setApplied(a.end)
	return nil
}

// retry runs fn until it succeeds or ctx ends, with exponential backoff
// up to MaxBackoff, counting each failure. The reader keeps the
// connection alive meanwhile, reporting the unchanged position. While it
// waits, it pings the cache's Redis every redisProbe: when Redis answers
// again, fn is tried at once, not after what is left of the backoff, so
// the writes made during an outage reach the cache as soon as it is back.
func (inv *Invalidator) retry(ctx context.Context, fn func(context.Context) error) error {
	b := backoff.New(minBackoff, inv.o.MaxBackoff)
	if inv.retryBackoff != 0 {
		b = backoff.New(inv.retryBackoff, inv.retryBackoff)
	}
	for {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		inv.ctr.fail(err, false)
		if err := inv.waitOrRedis(ctx, b.Next()); err != nil {
			return err
		}
	}
}

// redisProbe is how often retry pings Redis while it waits.
const redisProbe = 50 * time.Millisecond

// waitOrRedis waits d, or less: until a ping of a registered target's
// Redis succeeds. While Redis is down the backoff spaces the attempts; a
// failure with Redis up (an error reply) is retried every redisProbe.
func (inv *Invalidator) waitOrRedis(ctx context.Context, d time.Duration) error {
	inv.mu.Lock()
	var t table
	if len(inv.targets) > 0 {
		t = inv.targets[0]
	}
	inv.mu.Unlock()
	if t == nil || d <= redisProbe || inv.noRedisProbe {
		return backoff.Sleep(ctx, d)
	}
	end := time.Now().Add(d)
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		if err := backoff.Sleep(ctx, min(left, redisProbe)); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, redisProbe)
		err := t.Ping(pctx)
		cancel()
		if err == nil {
			return nil // Redis answers: try now
		}
	}
}
