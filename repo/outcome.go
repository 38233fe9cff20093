package repo

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sqlstate"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// This file holds what a write does when its database call fails without
// proving that nothing was written: the connection broke, or the context
// ended, while the statement or its COMMIT was in flight, and the reply
// was lost. The row may have changed, so the write does the cache upkeep
// it would have done on success (invalidating a value that did not change
// costs a reload, nothing more), and returns its error as it is.

// refusals are errors that GORM or the database return for a write that
// was refused, never applied: broken constraints, and input that GORM
// rejects before it sends anything.
var refusals = []error{
	ErrDuplicate, gorm.ErrDuplicatedKey, gorm.ErrForeignKeyViolated, gorm.ErrCheckConstraintViolated,
	gorm.ErrRecordNotFound, gorm.ErrMissingWhereClause, gorm.ErrPrimaryKeyRequired,
	gorm.ErrModelValueRequired, gorm.ErrInvalidData, gorm.ErrInvalidField, gorm.ErrInvalidValue,
	gorm.ErrInvalidValueOfLength, gorm.ErrEmptySlice, gorm.ErrInvalidTransaction,
	gorm.ErrNotImplemented, gorm.ErrUnsupportedDriver, gorm.ErrUnsupportedRelation,
	sql.ErrTxDone,
}

// unknownOutcome reports whether err, from a database write (a statement
// outside a transaction, or a transaction's COMMIT), leaves it unknown
// whether the write happened. The outcome is known (a failure) when the
// server answered with an error (PostgreSQL's SQLSTATE, SQLite's result
// code), except the codes of a session that is ending (classes 08 and
// 57P: the server may have committed before it said so), and when the
// error is a refusal (a constraint, input GORM rejects), or a failure to
// connect (nothing was sent). Everything else is unknown: a connection
// that broke, a timeout, an ended context, a hook's error (a hook cannot
// be told from the statement it wraps).
func unknownOutcome(err error) bool {
	if err == nil {
		return false
	}
	for _, r := range refusals {
		if errors.Is(err, r) {
			return false
		}
	}
	if op := (*net.OpError)(nil); errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	if state, ok := sqlstate.Of(err); ok {
		return sqlstate.SessionEnded(state)
	}
	var lite interface{ Code() int } // modernc.org/sqlite's *Error: in process, no reply to lose
	return !errors.As(err, &lite)
}

// writeFailed returns err, the failure of the database call of a write
// outside a transaction of the caller's (in one, a failed statement is
// rolled back with it, and the upkeep waits for a commit that cannot
// include it). When err leaves the outcome unknown, ch, the change the
// write meant, gets the upkeep of a committed change first: through
// runAfterCommit, so that what fails is retried in the background, never
// reported (err is the caller's answer). A Create whose generated primary
// key was lost with the reply cannot add it to the filter: the filter
// stops being trusted instead (bloom's Distrust), and rebuilds itself
// from the table.
func (r *Repository[T, ID]) writeFailed(ctx context.Context, err error, ch rowChange) error {
	if r.tx != nil || !unknownOutcome(err) || testswitch.UnknownUpkeepOff.Load() {
		return err
	}
	var w cacheaside.Effects
	r.c.queue(&w, ch)
	if ch.before == nil && ch.after != nil && ch.after.id == "" && r.c.filter != nil && r.keyMayBeLost(ctx) {
		w.Add(cacheaside.Distrust(r.c.filter, r.c.name))
		outcomes.distrusts.Add(1)
	}
	unknownUpkeep(ctx, r.c.db, r.c.cache, &w)
	return err
}

// keyMayBeLost reports whether an insert that failed before its generated
// key was known may nevertheless be in the table. Not in GORM's default
// transaction: the INSERT's reply, which carries the key (RETURNING), comes
// before the COMMIT, so a key still unknown means the INSERT failed and
// nothing was committed. Only an INSERT that commits on its own
// (SkipDefaultTransaction) can lose its key and be applied.
func (r *Repository[T, ID]) keyMayBeLost(ctx context.Context) bool {
	return r.conn(ctx).SkipDefaultTransaction
}

// unknownUpkeep runs w, the upkeep of writes of unknown outcome on db,
// after commit as far as the cache can tell, and counts it.
func unknownUpkeep(ctx context.Context, db *gorm.DB, cache *cacheaside.Cache, w *cacheaside.Effects) {
	outcomes.unknown.Add(1)
	afterCommitLSN(ctx, db, w)
	_ = runAfterCommit(ctx, cache, w, false)
}

// keysWritten returns the keys of row as a write meant to leave it, for
// writeFailed: what row does not tell is unknown (its id when the
// database was to generate it, a unique value that cannot be keyed).
func (c *core[T, ID]) keysWritten(ctx context.Context, row *T) *rowKeys {
	k := &rowKeys{uks: make([]oldKey, len(c.lookups)), lists: c.lists.keysOf(ctx, reflect.ValueOf(row).Elem())}
	if id, ok := c.idOf(ctx, row); ok {
		k.id, _ = c.cacheID(id) // checked before the write
	}
	if uks, err := c.uniqueKeysOf(ctx, row); err == nil {
		k.uks = uks
	}
	return k
}

// keysSet returns the keys of row id (cache id key) as a write meant to
// leave it that sets the columns vals (by database name) and no other, on
// a row whose keys were before (nil: unread), for writeFailed. A lookup or
// query whose columns it sets with plain values (no SQL expression) gets
// its new key; one whose columns it leaves alone keeps before's; any other
// is unknown.
func (c *core[T, ID]) keysSet(ctx context.Context, id ID, key string, before *rowKeys, vals map[string]any) *rowKeys {
	plain := map[string]any{c.pk.DBName: id}
	for col, v := range vals {
		if _, expr := v.(clause.Expression); !expr {
			plain[col] = v
		}
	}
	k, err := c.keysOf(ctx, plain)
	if err != nil { // a value the model's field does not take
		k = &rowKeys{uks: make([]oldKey, len(c.lookups))}
	}
	k.id = key
	if before == nil {
		return k
	}
	untouched := func(fields []*schema.Field) bool {
		for _, f := range fields {
			if _, set := vals[f.DBName]; set {
				return false
			}
		}
		return true
	}
	for i, l := range c.lookups {
		if i < len(before.uks) && untouched(l.fields) {
			k.uks[i] = before.uks[i]
		}
	}
	for i, q := range c.lists.all() {
		if i < len(before.lists) && i < len(k.lists) && untouched(q.cols) {
			k.lists[i] = before.lists[i]
		}
	}
	return k
}

// valuesOf returns the values of the named columns (database or field
// names, known to exist) of row, by database name.
func (c *core[T, ID]) valuesOf(ctx context.Context, row *T, columns []string) map[string]any {
	rv := reflect.ValueOf(row).Elem()
	vals := make(map[string]any, len(columns))
	for _, col := range columns {
		f := c.sch.LookUpField(col)
		vals[f.DBName], _ = f.ValueOf(ctx, rv)
	}
	return vals
}
