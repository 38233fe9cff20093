package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/asidekit/asidekit/cacheaside"
)

// GetBy returns the row whose unique column equals value, e.g.
// GetBy(ctx, "email", "ada@example.com"). column is a database or Go field
// name of a single-column unique index (ErrNoUniqueKey otherwise).
//
// The value → primary key mapping is cached in the entity
// "<name>.by.<column>" (absent values too, for NullTTL), and the row comes
// through Get, so a hit costs two GETs and no SQL. Writes through the
// repository that change the column invalidate the old and the new
// mapping. The row is checked against value before it is returned: a
// mapping gone stale some other way (a write outside the repository, an
// invalidation still being retried) is dropped and the database asked,
// never a wrong row returned.
func (r *Repository[T, ID]) GetBy(ctx context.Context, column string, value any) (T, error) {
	var zero T
	l, err := r.c.lookupBy(column)
	if err != nil {
		return zero, err
	}
	key, ok, err := valueKey(value)
	if err != nil {
		return zero, lookupValueErr(r.c.name, column, key, err)
	}
	if !ok {
		return zero, fmt.Errorf("%w: GetBy %s with a nil value", ErrInvalidID, column)
	}
	if err := l.checkType(value); err != nil {
		return zero, err
	}
	if r.tx != nil {
		return r.findBy(ctx, l, key, value)
	}
	id, err := l.ent.Get(ctx, key, func(ctx context.Context, _ string) (ID, error) {
		var ids []ID
		err := r.retryPlan(func() error {
			return r.conn(ctx).Model(new(T)).Where(l.eq(value)).Limit(1).Pluck(r.c.pk.DBName, &ids).Error
		})
		switch {
		case err != nil:
			return *new(ID), err // mapErr adds the context
		case len(ids) == 0:
			return *new(ID), ErrNotFound
		}
		return ids[0], nil
	})
	if err != nil {
		return zero, mapErr(l.name, key, err)
	}
	row, err := r.Get(ctx, id)
	switch {
	case err == nil:
		if got, ok, _ := l.key(ctx, reflect.ValueOf(&row).Elem()); ok && got == key {
			return row, nil
		}
	case !errors.Is(err, ErrNotFound):
		return zero, err
	}
	// The mapping points at a row that is gone or has another value now.
	if err := l.ent.Invalidate(ctx, key); err != nil && !errors.Is(err, cacheaside.ErrInvalidationPending) {
		return zero, fmt.Errorf("repo: %s %s: drop stale mapping: %w", l.name, key, err)
	}
	return r.findBy(ctx, l, key, value)
}

// findBy reads the row by its unique column from the database, uncached.
func (r *Repository[T, ID]) findBy(ctx context.Context, l *lookup[ID], key string, value any) (T, error) {
	var rows []T
	err := r.retryPlan(func() error {
		return r.conn(ctx).Clauses(r.c.selectCols()).Where(l.eq(value)).Limit(1).Find(&rows).Error
	})
	if err != nil {
		return *new(T), wrapErr(subject(l.name, key), err)
	}
	if len(rows) == 0 {
		return *new(T), notFoundErr(l.name, key)
	}
	return rows[0], nil
}

// lookupBy returns the single-column unique key over column.
func (c *core[T, ID]) lookupBy(column string) (*lookup[ID], error) {
	if f := c.sch.LookUpField(column); f != nil {
		i := slices.IndexFunc(c.lookups, func(l *lookup[ID]) bool { return len(l.fields) == 1 && l.fields[0] == f })
		if i >= 0 {
			return c.lookups[i], nil
		}
	}
	return nil, fmt.Errorf("%w: model %s has no single-column unique index over %q", ErrNoUniqueKey, c.sch.Name, column)
}

// lookupValueErr names the lookup, not an id, in the error of a GetBy
// value that cannot be text (a NUL byte, invalid UTF-8): still
// ErrInvalidID, quoting the value.
func lookupValueErr(entity, column, key string, err error) error {
	for _, p := range [...]struct {
		bad bool
		why string
	}{
		{strings.IndexByte(key, 0) >= 0, "holds a NUL byte"},
		{!utf8.ValidString(key), "is not valid UTF-8"},
	} {
		if p.bad {
			return &valueError{msg: fmt.Sprintf("repo: %s: GetBy %s: the value %q %s", entity, column, key, p.why)}
		}
	}
	return err
}

// valueError is the error of a GetBy value that is not text; it matches
// ErrInvalidID (and so ErrInvalid).
type valueError struct{ msg string }

func (e *valueError) Error() string { return e.msg }
func (e *valueError) Unwrap() error { return ErrInvalidID }
