package repo

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// Tx is a database transaction that holds back cache upkeep until it
// commits. Bind repositories to it with Repository.WithTx; use DB for
// plain GORM work in the same transaction.
type Tx struct {
	db *gorm.DB

	mu    sync.Mutex // guards after, cache and done
	after cacheaside.Effects
	cache *cacheaside.Cache // the first writer's: it retries the filters' failed upkeep
	done  bool              // committed or rolled back: nothing more may be queued
}

// Transaction runs fn in a database transaction (GORM's db.Transaction,
// with opts). If fn returns nil and the commit succeeds, the invalidations
// and filter adds queued by the writes of WithTx views run, once each;
// otherwise the transaction is rolled back and none of them run. A
// panic in fn rolls back and propagates (GORM re-panics): nothing is
// invalidated.
//
// The error is fn's or the commit's. Cache upkeep that fails after the
// commit is retried in the background and counted (GetAfterCommitStats),
// never returned: the transaction committed. A commit whose outcome is
// unknown (its reply lost with the connection, or the context ended while
// it was in flight) runs the queued upkeep too, as if it had committed,
// then returns its error.
func Transaction(ctx context.Context, db *gorm.DB, fn func(tx *Tx) error, opts ...*sql.TxOptions) error {
	if db == nil || fn == nil {
		return errors.New("repo: Transaction needs a *gorm.DB and a function")
	}
	var tx *Tx
	var fnErr error
	err := db.WithContext(ctx).Transaction(func(g *gorm.DB) error {
		tx = &Tx{db: g}
		fnErr = fn(tx)
		return fnErr
	}, opts...)
	if tx == nil { // Begin failed
		return err
	}
	after, cache := tx.finish()
	after.JoinPatches() // its writes' patches of one list: one call, in order
	switch {
	case err == nil:
	case fnErr == nil && unknownOutcome(err) && !testswitch.UnknownUpkeepOff.Load():
		// fn succeeded and the COMMIT's outcome is unknown: its lists
		// are bumped, not patched.
		if !testswitch.UnknownBumpOff.Load() {
			after.BumpPatches()
		}
		unknownUpkeep(ctx, db, cache, &after)
		return err
	default:
		return err
	}
	if after.Len() > 0 || tracking(ctx) {
		afterCommitLSN(ctx, db, &after)
	}
	return runAfterCommit(ctx, cache, &after, false)
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
	after, cache := inner.finish()
	if err != nil {
		return err
	}
	t.queue(cache, &after)
	return nil
}

// DB returns the transaction's *gorm.DB.
func (t *Tx) DB() *gorm.DB { return t.db }

// queue adds u, the work of a writer on cache, to the work to do after
// the commit. A Tx that already ended takes nothing more: its writes
// failed anyway.
func (t *Tx) queue(cache *cacheaside.Cache, u *cacheaside.Effects) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.done {
		t.after.Merge(u)
		if t.cache == nil {
			t.cache = cache
		}
	}
}

// finish ends the Tx and returns its queue and the Cache that retries
// its filters' failed work.
func (t *Tx) finish() (cacheaside.Effects, *cacheaside.Cache) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	after := t.after
	t.after = cacheaside.Effects{}
	return after, t.cache
}

// afterWrite queues u after the commit of the view's transaction, or runs
// it now when the view has none (the write has succeeded already).
func (r *Repository[T, ID]) afterWrite(ctx context.Context, u *cacheaside.Effects) error {
	if r.tx != nil {
		r.tx.queue(r.c.cache, u)
		return nil
	}
	afterCommitLSN(ctx, r.c.db, u)
	if h := beforeUpkeep.Load(); h != nil {
		(*h)()
	}
	return runAfterCommit(ctx, r.c.cache, u, r.c.reportAfterCommit)
}

// beforeUpkeep, when set (by a test), runs between a write's COMMIT and
// its cache upkeep: a test delays upkeeps with it, so that they run out
// of commit order.
var beforeUpkeep atomic.Pointer[func()]
