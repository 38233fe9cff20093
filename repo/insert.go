package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
)

// InsertIfAbsent inserts v unless a row with the same unique key
// (Options.UniqueKey, e.g. address + room) exists, and reports whether it
// inserted. It is safe to race: any number of callers, in any number of
// processes, inserting the same key get exactly one true between them.
//
// The insert is INSERT … ON CONFLICT (key) DO NOTHING, so the unique index
// decides, never a read followed by an insert. Before it:
//
//   - with Options.Filter, a "definitely new" answer of the key's Bloom
//     filter goes straight to the insert, with no read;
//   - otherwise ("maybe", or no filter) the cached key → primary key
//     mapping is read (a Redis GET; SQL on a miss): a row found is a
//     duplicate at once, with no write; a row not found leaves it to the
//     insert.
//
// On true, v has its generated primary key, the key is added to the
// filters and cached "not found" answers are cleared (after the commit, in
// a WithTx view, which goes straight to the insert). On false, v is left
// as it was. A NULL in the key is an error: NULLs never conflict.
func (r *Repository[T, ID]) InsertIfAbsent(ctx context.Context, v *T) (bool, error) {
	if err := r.c.open("InsertIfAbsent"); err != nil {
		return false, err
	}
	u := r.c.uniq
	if u == nil {
		return false, r.c.uniqErr
	}
	if v == nil {
		return false, fmt.Errorf("repo: %s: InsertIfAbsent of a nil value", r.c.name)
	}
	if err := r.c.checkUniques(ctx, v); err != nil {
		return false, err
	}
	rv := reflect.ValueOf(v).Elem()
	uk, ok, err := u.key(ctx, rv)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("%w: %s: InsertIfAbsent with a NULL in the unique key", ErrInvalidID, u.name)
	}
	if r.tx == nil {
		dup, err := r.knownDuplicate(ctx, u, uk, rv)
		if dup || err != nil {
			return false, err
		}
	}
	cols := make([]clause.Column, len(u.fields))
	for i, f := range u.fields {
		cols[i] = clause.Column{Name: f.DBName}
	}
	res := r.conn(ctx).Clauses(clause.OnConflict{Columns: cols, DoNothing: true}).Create(v)
	if res.Error != nil {
		return false, r.writeFailed(ctx, wrapErr(subject(u.name, uk)+": insert", dbErr(res.Error)), rowChange{after: r.c.keysWritten(ctx, v)})
	}
	if res.RowsAffected == 0 {
		return false, nil
	}
	return true, r.upkeep(ctx, nil, v, nil)
}

// knownDuplicate reports whether the unique key uk is known to exist,
// without writing: false when the filter says it is new.
func (r *Repository[T, ID]) knownDuplicate(ctx context.Context, u *lookup[ID], uk string, rv reflect.Value) (bool, error) {
	if u.filter != nil {
		// A filter error only costs the lookup below.
		if maybe, err := u.filter.MightContain(ctx, uk); err == nil && !maybe {
			return false, nil
		}
	}
	_, err := u.ent.Get(ctx, uk, func(ctx context.Context, _ string) (ID, error) {
		var ids []ID
		err := r.conn(ctx).Model(new(T)).Where(u.where(ctx, rv)).Limit(1).Pluck(r.c.pk.DBName, &ids).Error
		switch {
		case err != nil:
			return *new(ID), err // mapErr adds the context
		case len(ids) == 0:
			return *new(ID), ErrNotFound
		}
		return ids[0], nil
	})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, cacheaside.ErrNotFound):
		return false, nil
	case ctx.Err() != nil:
		return false, ctx.Err()
	}
	// Redis or the database failed: the insert still decides correctly.
	return false, nil
}
