package repo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// AfterCommitTimeout bounds the cache upkeep (invalidations, filter adds)
// that runs after a write. It runs on a context detached from the caller's
// cancellation: once the database has the write, giving up on the
// invalidation because the caller went away would leave a stale value
// cached for a whole TTL.
const AfterCommitTimeout = 5 * time.Second

// Tx is a database transaction that holds back cache upkeep until it
// commits. Bind repositories to it with Repository.WithTx; use DB for
// plain GORM work in the same transaction.
type Tx struct {
	db *gorm.DB

	mu    sync.Mutex // guards after and done
	after []func(context.Context) error
	done  bool // committed or rolled back: nothing more may be queued
}

// Transaction runs fn in a database transaction (GORM's db.Transaction,
// with opts). If fn returns nil and the commit succeeds, the invalidations
// and filter adds queued by the writes of WithTx views run, once each, in
// order; otherwise the transaction is rolled back and none of them run. A
// panic in fn rolls back and propagates (GORM re-panics): nothing is
// invalidated.
//
// The error is fn's, the commit's, or, after a successful commit, one
// matching ErrAfterCommit.
func Transaction(ctx context.Context, db *gorm.DB, fn func(tx *Tx) error, opts ...*sql.TxOptions) error {
	var tx *Tx
	err := db.WithContext(ctx).Transaction(func(g *gorm.DB) error {
		tx = &Tx{db: g}
		return fn(tx)
	}, opts...)
	if tx == nil { // Begin failed
		return err
	}
	after := tx.finish()
	if err != nil {
		return err
	}
	return runAfter(ctx, after)
}

// Transaction runs fn in a nested transaction (a savepoint). What fn's
// writes queue joins this transaction's queue if fn succeeds, and is
// dropped with the savepoint if it fails.
func (t *Tx) Transaction(fn func(tx *Tx) error) error {
	var inner *Tx
	err := t.db.Transaction(func(g *gorm.DB) error {
		inner = &Tx{db: g}
		return fn(inner)
	})
	if inner == nil {
		return err
	}
	after := inner.finish()
	if err != nil {
		return err
	}
	for _, f := range after {
		t.queue(f)
	}
	return nil
}

// DB returns the transaction's *gorm.DB.
func (t *Tx) DB() *gorm.DB { return t.db }

// queue queues f to run after the commit. A Tx that already ended runs
// nothing more: its writes failed anyway.
func (t *Tx) queue(f func(context.Context) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.done {
		t.after = append(t.after, f)
	}
}

// finish ends the Tx and returns its queue.
func (t *Tx) finish() []func(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	after := t.after
	t.after = nil
	return after
}

// runAfter runs the upkeep of a committed write, every step even when an
// earlier one failed, bounded by AfterCommitTimeout.
func runAfter(ctx context.Context, after []func(context.Context) error) error {
	if len(after) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AfterCommitTimeout)
	defer cancel()
	var errs []error
	for _, f := range after {
		if err := f(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrAfterCommit, errors.Join(errs...))
}

// afterWrite queues f after the commit of the view's transaction, or runs
// it now when the view has none (the write has succeeded already).
func (r *Repository[T, ID]) afterWrite(ctx context.Context, f ...func(context.Context) error) error {
	if r.tx != nil {
		for _, g := range f {
			r.tx.queue(g)
		}
		return nil
	}
	return runAfter(ctx, f)
}
