package repo

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// Create inserts v (GORM's Create, which fills in the generated primary
// key), then adds the id to the Bloom filter and invalidates the id and
// the new values of unique columns, clearing any cached "not found". In a
// WithTx view that upkeep waits for the commit.
//
// When T has a gorm.DeletedAt, the primary key of a soft-deleted row is
// free again: Create replaces that row (INSERT … ON CONFLICT (pk) DO UPDATE
// … WHERE deleted_at IS NOT NULL), and a live row with the key is ErrDuplicate
// (which matches gorm.ErrDuplicatedKey too); on PostgreSQL that upsert,
// when it fails as a duplicate or a deadlock outside a transaction, runs
// again in a transaction that reads the row locked first (see Put). An id
// that cannot be a cache key, or a
// zero primary key that neither the database nor a hook fills in, is
// ErrInvalidID, before anything is written.
func (r *Repository[T, ID]) Create(ctx context.Context, v *T) error {
	if err := r.c.open("Create"); err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("repo: %s: Create of a nil value", r.c.name)
	}
	id, hasID := r.c.idOf(ctx, v)
	key := ""
	switch sch := r.c.sch; {
	case hasID:
		var err error
		if key, err = r.c.cacheID(id); err != nil {
			return err
		}
	case !r.c.pk.HasDefaultValue && !sch.BeforeCreate && !sch.BeforeSave:
		return fmt.Errorf("%w: %s: Create needs the primary key set (the database does not generate it)", ErrInvalidID, r.c.name)
	}
	if err := r.c.checkUniques(ctx, v); err != nil {
		return err
	}
	if hasID && r.c.softDel != nil && r.tx != nil { // lock the row Create may take over (readBefore)
		if _, _, err := r.readBefore(ctx, id, key); err != nil {
			return err
		}
	}
	seen := r.seen(ctx, nil, v, key)
	if !hasID || r.c.softDel == nil {
		if err := r.returning(r.conn(ctx), seen).Create(v).Error; err != nil {
			return r.writeFailed(ctx, wrapErr(r.c.name+": create", dbErr(err)), rowChange{after: r.c.keysWritten(ctx, v)})
		}
		return r.upkeep(ctx, nil, v, seen)
	}
	res := r.returning(r.conn(ctx), seen).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: r.c.pk.DBName}},
		UpdateAll: true,
		Where: clause.Where{Exprs: []clause.Expression{clause.Expr{
			SQL:  "? IS NOT NULL",
			Vars: []any{clause.Column{Table: clause.CurrentTable, Name: r.c.softDel.DBName}},
		}}},
	}).Create(v)
	if res.Error != nil {
		err := dbErr(res.Error)
		if r.upsertRaced(ctx, err) {
			return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.Create(ctx, v) })
		}
		return r.writeFailed(ctx, wrapErr(subject(r.c.name, key)+": create", err), rowChange{after: r.c.keysWritten(ctx, v)})
	}
	if res.RowsAffected == 0 {
		return wrapErr(subject(r.c.name, key)+": create", fmt.Errorf("%w: the row exists", ErrDuplicate))
	}
	return r.upkeep(ctx, nil, v, seen)
}

// Update writes every column of v to the row with v's primary key (GORM's
// Save, zero values included, without Save's insert when the row is
// absent), then invalidates the id and, when a unique column changed, its
// old and new mapping. An absent row is ErrNotFound.
func (r *Repository[T, ID]) Update(ctx context.Context, v *T) error {
	if err := r.c.open("Update"); err != nil {
		return err
	}
	id, key, err := r.keyOfRow(ctx, v, "Update")
	if err != nil {
		return err
	}
	if err := r.c.checkUniques(ctx, v); err != nil {
		return err
	}
	before, g, err := r.readBefore(ctx, id, key)
	if err != nil {
		return err
	}
	seen := r.seen(ctx, before, v, key)
	res := g.on(r.returning(r.conn(ctx), seen)).Select("*").Save(v)
	if res.Error != nil {
		if r.deadlocked(res.Error) {
			return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.Update(ctx, v) })
		}
		return r.writeFailed(ctx, wrapErr(subject(r.c.name, key)+": update", dbErr(res.Error)),
			rowChange{before: r.existing(before, key), after: r.c.keysWritten(ctx, v)})
	}
	if res.RowsAffected == 0 && g != nil { // the row changed since it was read
		return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.Update(ctx, v) })
	}
	if res.RowsAffected == 0 {
		return notFoundErr(r.c.name, key)
	}
	return r.upkeep(ctx, r.existing(before, key), v, seen)
}

// Put inserts v or, when a row with its primary key exists, overwrites
// every column (INSERT … ON CONFLICT (pk) DO UPDATE), then does Create's
// upkeep and Update's invalidations. A zero primary key is a Create. On
// return v holds the row as stored, timestamps included (GORM's upsert sets
// updated_at itself and keeps an existing row's created_at). On
// PostgreSQL, outside a transaction, a Put of a table with unique keys
// whose upsert fails as a duplicate or a deadlock runs again in a
// transaction that reads the row locked first: concurrent writes of one
// row can make PostgreSQL report a duplicate of another unique column that
// no other row holds.
func (r *Repository[T, ID]) Put(ctx context.Context, v *T) error {
	if err := r.c.open("Put"); err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("repo: %s: Put of a nil value", r.c.name)
	}
	id, ok := r.c.idOf(ctx, v)
	if !ok {
		return r.Create(ctx, v)
	}
	key, err := r.c.cacheID(id)
	if err != nil {
		return err
	}
	if err := r.c.checkUniques(ctx, v); err != nil {
		return err
	}
	before, g, err := r.readBefore(ctx, id, key)
	if err != nil {
		return err
	}
	if before == nil && r.tx == nil { // read, and absent: the upsert must insert
		g = absentGuard()
	}
	if before != nil && len(r.c.lookups) == 0 { // not read: the row may be new
		before.id = ""
	}
	seen := r.seen(ctx, before, v, key)
	// RETURNING reads back what the row holds now: on a conflict GORM
	// stamps updated_at with a time of its own and keeps created_at, so v's
	// fields would otherwise differ from the stored row.
	res := r.conn(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: r.c.pk.DBName}},
		UpdateAll: true,
		Where:     g.where(),
	}, clause.Returning{}).Create(v)
	if res.Error != nil {
		err := dbErr(res.Error)
		if r.upsertRaced(ctx, err) {
			return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.Put(ctx, v) })
		}
		return r.writeFailed(ctx, wrapErr(subject(r.c.name, key)+": put", err), rowChange{before: before, after: r.c.keysWritten(ctx, v)})
	}
	if res.RowsAffected == 0 && g != nil { // the row changed, or came, since it was read
		return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.Put(ctx, v) })
	}
	return r.upkeep(ctx, before, v, seen)
}

// upsertRaced reports whether err, the failure of an upsert (Put's, or
// Create's of a soft-deletable table, which takes a soft-deleted row
// over), may be PostgreSQL's answer to a concurrent write of the same row
// rather than a duplicate: outside a transaction, for a table with a
// unique index besides the primary key, a unique violation or a deadlock.
// An upsert (INSERT … ON CONFLICT (pk) DO UPDATE) of a row that exists
// can fail so when a concurrent write of the row changes it while the
// upsert checks for a conflict, though no other row has the value.
func (r *Repository[T, ID]) upsertRaced(ctx context.Context, err error) bool {
	return r.tx == nil && len(r.c.lookups) > 0 && !testswitch.PutLockedOff.Load() &&
		(errors.Is(err, ErrDuplicate) || isDeadlock(err)) && r.conn(ctx).Dialector.Name() == "postgres"
}

// deadlocked reports whether err, the failure of a write's statement
// outside a transaction, is a deadlock: PostgreSQL rolled the statement
// back (nothing was written), and the write runs again with the row
// locked (writeLocked). A single-row write takes part in one only beside
// a transaction that locks the row first (another write's run under the
// row's lock) or an upsert's check for a conflict.
func (r *Repository[T, ID]) deadlocked(err error) bool {
	return r.tx == nil && !testswitch.PutLockedOff.Load() && isDeadlock(err)
}

// writeLocked runs write, a write of one row (Create, Put, Update,
// UpdateColumns, Modify or Delete of the view it is given), again in a
// transaction whose read of the row before its statement locks it,
// soft-deleted or not (readBefore, on PostgreSQL), so that no write of the
// row runs between: a duplicate there is one. The writes run it after an
// upsert that raced (upsertRaced), a statement that deadlocked
// (deadlocked), and a guarded statement that found its row changed since
// it was read. A deadlock with the unlocked statements of others is tried
// again, up to writeLockedTries times; in a caller's transaction, which
// the deadlock aborted, it is returned. (The failed statement wrote
// nothing, the server answered it: it needs no upkeep.)
func (r *Repository[T, ID]) writeLocked(ctx context.Context, write func(tx *Repository[T, ID]) error) error {
	var err error
	for range writeLockedTries {
		err = r.inTx(ctx, write)
		if r.tx != nil || !isDeadlock(err) { // (a caller's transaction is aborted: its caller retries)
			return err
		}
	}
	return err
}

// writeLockedTries bounds writeLocked's attempts.
const writeLockedTries = 3

// Delete deletes the row with primary key id (a soft delete when T has a
// gorm.DeletedAt), then invalidates the id and the row's unique-column
// mappings. An absent row is ErrNotFound. The id stays in the Bloom filter
// until RebuildFilter.
func (r *Repository[T, ID]) Delete(ctx context.Context, id ID) error {
	if err := r.c.open("Delete"); err != nil {
		return err
	}
	key, err := r.c.cacheID(id)
	if err != nil {
		return err
	}
	before, g, err := r.readBefore(ctx, id, key)
	if err != nil {
		return err
	}
	seen := r.seen(ctx, before, nil, "")
	res := g.on(r.conn(ctx)).Where(r.c.pkEq(id)).Delete(new(T))
	if res.Error != nil {
		if r.deadlocked(res.Error) {
			return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.Delete(ctx, id) })
		}
		return r.writeFailed(ctx, wrapErr(subject(r.c.name, key)+": delete", res.Error), rowChange{before: r.existing(before, key)})
	}
	if res.RowsAffected == 0 && g != nil { // the row changed since it was read
		return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.Delete(ctx, id) })
	}
	if res.RowsAffected == 0 {
		return notFoundErr(r.c.name, key)
	}
	ch := rowChange{before: r.existing(before, key)}
	if seen != nil && seen.lists != nil {
		ch.seen, ch.idJSON = seen.lists, idJSON(id)
	}
	return r.apply(ctx, ch)
}

// keyOfRow returns v's primary key and its cache id; a nil v or a zero key
// is an error.
func (r *Repository[T, ID]) keyOfRow(ctx context.Context, v *T, op string) (ID, string, error) {
	if v == nil {
		return *new(ID), "", fmt.Errorf("repo: %s: %s of a nil value", r.c.name, op)
	}
	id, ok := r.c.idOf(ctx, v)
	if !ok {
		return id, "", fmt.Errorf("%w: %s: %s needs the primary key set", ErrInvalidID, r.c.name, op)
	}
	key, err := r.c.cacheID(id)
	return id, key, err
}

// upkeep queues (or runs) the cache work of a write that left row in the
// table in place of before (nil: no row before). seen is what the write
// read before its statement (Repository.seen), or nil: with it, the
// upkeep patches the lists and, when row is the row as stored
// (RETURNING), stores it.
func (r *Repository[T, ID]) upkeep(ctx context.Context, before *rowKeys, row *T, seen *seenBefore) error {
	after, err := r.c.keysOfRow(ctx, row)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAfterCommit, err)
	}
	ch := rowChange{before: before, after: after}
	if seen != nil {
		id, _ := r.c.idOf(ctx, row)
		if seen.lists != nil {
			ch.seen, ch.idJSON = seen.lists, idJSON(id)
		}
		if seen.fill && !testswitch.RowFillOff.Load() {
			fill := cacheaside.StoreIfVersion(r.c.ent, after.id, seen.version, *row)
			ch.fill = &fill
		}
	}
	return r.apply(ctx, ch)
}

// apply queues (or runs) the cache work of ch.
func (r *Repository[T, ID]) apply(ctx context.Context, ch rowChange) error {
	var w cacheaside.Effects
	r.c.queue(&w, ch)
	return r.afterWrite(ctx, &w)
}
