package repo

import (
	"context"
	"fmt"
	"reflect"

	"gorm.io/gorm/clause"
)

// Create inserts v (GORM's Create, which fills in the generated primary
// key), then adds the id to the Bloom filter and invalidates the id and
// the new values of unique columns, clearing any cached "not found". In a
// WithTx view that upkeep waits for the commit.
//
// When T has a gorm.DeletedAt, the primary key of a soft-deleted row is
// free again: Create replaces that row (INSERT … ON CONFLICT (pk) DO UPDATE
// … WHERE deleted_at IS NOT NULL), and a live row with the key is ErrDuplicate
// (which matches gorm.ErrDuplicatedKey too). An id that cannot be a cache key, or a
// zero primary key that neither the database nor a hook fills in, is
// ErrInvalidID, before anything is written.
func (r *Repository[T, ID]) Create(ctx context.Context, v *T) error {
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
	if !hasID || r.c.softDel == nil {
		if err := r.conn(ctx).Create(v).Error; err != nil {
			return wrapErr(r.c.name+": create", dbErr(err))
		}
		return r.upkeep(ctx, v, nil, true)
	}
	res := r.conn(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: r.c.pk.DBName}},
		UpdateAll: true,
		Where: clause.Where{Exprs: []clause.Expression{clause.Expr{
			SQL:  "? IS NOT NULL",
			Vars: []any{clause.Column{Table: clause.CurrentTable, Name: r.c.softDel.DBName}},
		}}},
	}).Create(v)
	if res.Error != nil {
		return wrapErr(r.c.name+" "+key+": create", dbErr(res.Error))
	}
	if res.RowsAffected == 0 {
		return wrapErr(r.c.name+" "+key+": create", fmt.Errorf("%w: the row exists", ErrDuplicate))
	}
	return r.upkeep(ctx, v, nil, true)
}

// Update writes every column of v to the row with v's primary key (GORM's
// Save, zero values included, without Save's insert when the row is
// absent), then invalidates the id and, when a unique column changed, its
// old and new mapping. An absent row is ErrNotFound.
func (r *Repository[T, ID]) Update(ctx context.Context, v *T) error {
	id, key, err := r.keyOfRow(ctx, v, "Update")
	if err != nil {
		return err
	}
	old, _, err := r.oldKeys(ctx, id)
	if err != nil {
		return err
	}
	res := r.conn(ctx).Select("*").Save(v)
	if res.Error != nil {
		return wrapErr(r.c.name+" "+key+": update", dbErr(res.Error))
	}
	if res.RowsAffected == 0 {
		return notFoundErr(r.c.name, key)
	}
	return r.upkeep(ctx, v, old, false)
}

// Put inserts v or, when a row with its primary key exists, overwrites
// every column (INSERT … ON CONFLICT (pk) DO UPDATE), then does Create's
// upkeep and Update's invalidations. A zero primary key is a Create. On
// return v holds the row as stored, timestamps included (GORM's upsert sets
// updated_at itself and keeps an existing row's created_at).
func (r *Repository[T, ID]) Put(ctx context.Context, v *T) error {
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
	old, _, err := r.oldKeys(ctx, id)
	if err != nil {
		return err
	}
	// RETURNING reads back what the row holds now: on a conflict GORM
	// stamps updated_at with a time of its own and keeps created_at, so v's
	// fields would otherwise differ from the stored row.
	err = r.conn(ctx).Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: r.c.pk.DBName}},
		UpdateAll: true,
	}, clause.Returning{}).Create(v).Error
	if err != nil {
		return wrapErr(r.c.name+" "+key+": put", dbErr(err))
	}
	return r.upkeep(ctx, v, old, true)
}

// Delete deletes the row with primary key id (a soft delete when T has a
// gorm.DeletedAt), then invalidates the id and the row's unique-column
// mappings. An absent row is ErrNotFound. The id stays in the Bloom filter
// until RebuildFilter.
func (r *Repository[T, ID]) Delete(ctx context.Context, id ID) error {
	key, err := r.c.cacheID(id)
	if err != nil {
		return err
	}
	old, _, err := r.oldKeys(ctx, id)
	if err != nil {
		return err
	}
	res := r.conn(ctx).Where(r.c.pkEq(id)).Delete(new(T))
	if res.Error != nil {
		return wrapErr(r.c.name+" "+key+": delete", res.Error)
	}
	if res.RowsAffected == 0 {
		return notFoundErr(r.c.name, key)
	}
	var u upkeep
	u.invalidate(r.c.ent, key)
	for i, l := range r.c.lookups {
		if old[i].ok && l.cacheable(old[i].key) {
			u.invalidate(l.ent, old[i].key)
		}
	}
	return r.afterWrite(ctx, &u)
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

// oldKey is a row's key in one lookup before a write; ok is false when the
// row or the value was absent.
type oldKey struct {
	key string
	ok  bool
}

// oldKeys reads the unique-column values of row id before a write, one per
// lookup (none when the model has no unique key: no query then). found
// reports whether the row exists.
func (r *Repository[T, ID]) oldKeys(ctx context.Context, id ID) (old []oldKey, found bool, err error) {
	old = make([]oldKey, len(r.c.lookups))
	if len(r.c.lookups) == 0 {
		return old, false, nil
	}
	var rows []T
	if err := r.conn(ctx).Select(r.c.keyCols()).Where(r.c.pkEq(id)).Limit(1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("repo: %s: read unique columns before the write: %w", r.c.name, err)
	}
	if len(rows) == 0 {
		return old, false, nil
	}
	if old, err = r.c.oldKeysOf(ctx, &rows[0]); err != nil {
		return nil, false, err
	}
	return old, true, nil
}

// upkeep queues (or runs) what follows a write of row: with add, adding it
// to the filters (and, add or not, a unique key's new value to its
// filter); then invalidating its id, and the mappings of every unique key
// whose value changed from old (nil: no previous row).
func (r *Repository[T, ID]) upkeep(ctx context.Context, row *T, old []oldKey, add bool) error {
	c := r.c
	_, key, err := r.keyOfRow(ctx, row, "write")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrAfterCommit, err)
	}
	rv := reflect.ValueOf(row).Elem()
	var u upkeep
	if add && c.filter != nil {
		u.add(c.filter, c.name, key)
	}
	u.invalidate(c.ent, key)
	for i, l := range c.lookups {
		nk, hasNew, err := l.key(ctx, rv)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrAfterCommit, err)
		}
		var was oldKey
		if old != nil {
			was = old[i]
		}
		if l.filter != nil && hasNew && (add || !was.ok || was.key != nk) {
			u.add(l.filter, l.name, nk)
		}
		hasNew = hasNew && l.cacheable(nk)
		was.ok = was.ok && l.cacheable(was.key)
		switch {
		case was.ok && hasNew && was.key == nk:
			// The mapping did not change.
		case was.ok && hasNew:
			u.invalidate(l.ent, was.key, nk)
		case was.ok:
			u.invalidate(l.ent, was.key)
		case hasNew:
			u.invalidate(l.ent, nk)
		}
	}
	return r.afterWrite(ctx, &u)
}
