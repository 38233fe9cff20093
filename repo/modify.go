package repo

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// ErrConditionFailed is returned by Modify when the row exists but does
// not meet the condition (e.g. not enough stock): nothing was written.
var ErrConditionFailed = errors.New("repo: condition not met")

// UpdateColumns writes only the named columns (database or field names) of
// v to the row with v's primary key, leaving every other column as it is,
// zero values in v included: unlike Update, UpdateColumns(&Product{ID: 7,
// Slug: "x"}, "slug") changes the slug alone. On return v holds the whole
// row as stored (UPDATE … RETURNING *). Then, like every write, it
// invalidates the id and the mappings of unique values that changed. An
// absent row is ErrNotFound; no column, or an unknown one, is an error
// before anything is written.
func (r *Repository[T, ID]) UpdateColumns(ctx context.Context, v *T, columns ...string) error {
	if err := r.c.open("UpdateColumns"); err != nil {
		return err
	}
	id, key, err := r.keyOfRow(ctx, v, "UpdateColumns")
	if err != nil {
		return err
	}
	if len(columns) == 0 {
		return fmt.Errorf("repo: %s: UpdateColumns without a column", r.c.name)
	}
	for _, col := range columns {
		f := r.c.sch.LookUpField(col)
		if f == nil || f.DBName == "" {
			return fmt.Errorf("repo: %s: UpdateColumns: no column %q", r.c.name, col)
		}
		if f.PrimaryKey {
			return fmt.Errorf("repo: %s: UpdateColumns cannot change the primary key", r.c.name)
		}
	}
	if err := r.c.checkUniques(ctx, v, columns...); err != nil {
		return err
	}
	before, g, err := r.readBefore(ctx, id, key)
	if err != nil {
		return err
	}
	seen := r.seenStaying(ctx, before, key)
	var rows []T
	res := g.on(r.conn(ctx)).Model(&rows).Clauses(clause.Returning{}).Where(r.c.pkEq(id)).Select(columns).Updates(v)
	if res.Error != nil {
		if r.deadlocked(res.Error) {
			return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.UpdateColumns(ctx, v, columns...) })
		}
		return r.writeFailed(ctx, wrapErr(subject(r.c.name, key)+": update columns", dbErr(res.Error)),
			rowChange{before: r.existing(before, key), after: r.c.keysSet(ctx, id, key, before, r.c.valuesOf(ctx, v, columns))})
	}
	if (res.RowsAffected == 0 || len(rows) == 0) && g != nil { // the row changed since it was read
		return r.writeLocked(ctx, func(tx *Repository[T, ID]) error { return tx.UpdateColumns(ctx, v, columns...) })
	}
	if res.RowsAffected == 0 || len(rows) == 0 {
		return notFoundErr(r.c.name, key)
	}
	*v = rows[0]
	return r.upkeep(ctx, r.existing(before, key), v, seen)
}

// Modify sets columns of the row with primary key id to values or SQL
// expressions, in one UPDATE, when the row meets every condition in where,
// and returns the row as stored (RETURNING *): an atomic change such as a
// stock decrement needs no SELECT … FOR UPDATE and no full-row write.
//
//	p, err := products.Modify(ctx, 7,
//		map[string]any{"stock": gorm.Expr("stock - ?", n)},
//		gorm.Expr("stock >= ?", n))
//
// Keys of set are column (or field) names. Like every write it then
// invalidates the id and the mappings of unique values that changed. An
// absent row is ErrNotFound; a row that fails a condition is
// ErrConditionFailed, and nothing is written. When the UPDATE found no
// row, one statement tells which; a row that meets the conditions by then
// (changed, or deleted and inserted again, meanwhile) is locked (SELECT …
// FOR UPDATE, in a transaction) and updated again: the answer is then
// what the row was under the lock.
func (r *Repository[T, ID]) Modify(ctx context.Context, id ID, set map[string]any, where ...clause.Expression) (T, error) {
	if err := r.c.open("Modify"); err != nil {
		return *new(T), err
	}
	var zero T
	key, err := r.c.cacheID(id)
	if err != nil {
		return zero, err
	}
	if len(set) == 0 {
		return zero, fmt.Errorf("repo: %s: Modify without a column to set", r.c.name)
	}
	cols := make(map[string]any, len(set))
	for col, v := range set {
		f := r.c.sch.LookUpField(col)
		if f == nil || f.DBName == "" {
			return zero, fmt.Errorf("repo: %s: Modify: no column %q", r.c.name, col)
		}
		if f.PrimaryKey {
			return zero, fmt.Errorf("repo: %s: Modify cannot change the primary key", r.c.name)
		}
		cols[f.DBName] = v
	}
	if err := r.c.checkSet(cols); err != nil {
		return zero, err
	}
	row, meets, err := r.modifyOnce(ctx, id, key, set, cols, where)
	if !meets || testswitch.ModifyLockOff.Load() {
		return row, err
	}
	// The row meets where by now: it was absent when the UPDATE ran and
	// came back since, or it failed where then and changed since. Lock it
	// and run the UPDATE again: the UPDATE, and the reason it gives if it
	// changes nothing, then see the same row.
	err = r.writeLocked(ctx, func(tx *Repository[T, ID]) error {
		if err := tx.lockRow(ctx, id, key); err != nil {
			return err
		}
		row, _, err = tx.modifyOnce(ctx, id, key, set, cols, where)
		return err
	})
	return row, err
}

// modifyOnce is one UPDATE of Modify (cols are set's columns by database
// name). When it changes nothing, meets reports that the row meets where
// by the time it was asked why (see whyUnmodified); err is then
// ErrConditionFailed.
func (r *Repository[T, ID]) modifyOnce(ctx context.Context, id ID, key string, set, cols map[string]any, where []clause.Expression) (row T, meets bool, err error) {
	before, g, err := r.readBefore(ctx, id, key)
	if err != nil {
		return row, false, err
	}
	seen := r.seenStaying(ctx, before, key)
	var rows []T
	q := g.on(r.conn(ctx)).Model(&rows).Clauses(clause.Returning{}).Where(r.c.pkEq(id))
	for _, w := range where {
		q = q.Where(w)
	}
	res := q.Updates(cols)
	if res.Error != nil {
		if r.deadlocked(res.Error) {
			row, err := r.modifyLocked(ctx, id, set, where)
			return row, false, err
		}
		return row, false, r.writeFailed(ctx, wrapErr(subject(r.c.name, key)+": modify", dbErr(res.Error)),
			rowChange{before: r.existing(before, key), after: r.c.keysSet(ctx, id, key, before, cols)})
	}
	if res.RowsAffected > 0 && len(rows) > 0 {
		return rows[0], false, r.upkeep(ctx, r.existing(before, key), &rows[0], seen)
	}
	if g != nil {
		// The row changed or went since it was read, or fails where: the
		// run in a transaction, whose read locks the row, tells which.
		row, err := r.modifyLocked(ctx, id, set, where)
		return row, false, err
	}
	if len(where) == 0 {
		// No condition to fail: the row was absent when the UPDATE ran (a
		// count now could find it inserted again since).
		return row, false, notFoundErr(r.c.name, key)
	}
	meets, err = r.whyUnmodified(ctx, id, key, where)
	return row, meets, err
}

// modifyLocked is Modify again in a transaction whose read of the row
// locks it (writeLocked).
func (r *Repository[T, ID]) modifyLocked(ctx context.Context, id ID, set map[string]any, where []clause.Expression) (row T, err error) {
	err = r.writeLocked(ctx, func(tx *Repository[T, ID]) (err error) {
		row, err = tx.Modify(ctx, id, set, where...)
		return err
	})
	return row, err
}

// lockRow locks row key for the rest of the transaction r is in (SELECT …
// FOR UPDATE), or returns ErrNotFound when there is none.
func (r *Repository[T, ID]) lockRow(ctx context.Context, id ID, key string) error {
	var rows []T
	err := r.conn(ctx).Clauses(clause.Locking{Strength: "UPDATE"}).Select(r.c.pk.DBName).Where(r.c.pkEq(id)).Limit(1).Find(&rows).Error
	if err != nil {
		return wrapErr(subject(r.c.name, key)+": modify", dbErr(err))
	}
	if len(rows) == 0 {
		return notFoundErr(r.c.name, key)
	}
	return nil
}

// whyUnmodified says, in one statement (one snapshot), why Modify's
// UPDATE with conditions where found no row: absent (ErrNotFound), failing
// where (ErrConditionFailed), or meeting where by now (meets, and err is
// ErrConditionFailed). Two counts in two statements could see a row
// absent at the UPDATE and inserted again before the count as a failed
// condition.
func (r *Repository[T, ID]) whyUnmodified(ctx context.Context, id ID, key string, where []clause.Expression) (meets bool, err error) {
	var n struct{ Found, Meets int64 }
	q := r.conn(ctx).Model(new(T)).Select("count(*) AS found, coalesce(sum(CASE WHEN ? THEN 1 ELSE 0 END), 0) AS meets", clause.And(where...)).Where(r.c.pkEq(id))
	if err := q.Scan(&n).Error; err != nil {
		return false, wrapErr(subject(r.c.name, key)+": modify", dbErr(err))
	}
	if n.Found == 0 {
		return false, notFoundErr(r.c.name, key)
	}
	return n.Meets > 0, wrapErr(subject(r.c.name, key)+": modify", ErrConditionFailed)
}

// existing is what a write that found row key in the table knows of it
// before: before as read, or, when the read found nothing (the row came
// meanwhile), its id alone with its unique values unknown.
func (r *Repository[T, ID]) existing(before *rowKeys, key string) *rowKeys {
	if before == nil {
		return &rowKeys{id: key}
	}
	return before
}
