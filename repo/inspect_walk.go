package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/inspect"
)

// lookRow compares the cached entry of the row id with the database.
func (in *inspection[T, ID]) lookRow(ctx context.Context, key string) (inspect.Look, error) {
	ent := in.r.c.ent
	p, err := ent.Peek(ctx, key)
	lk := inspect.Look{Entity: in.r.c.name, ID: key, Entry: entryOf(p)}
	if err != nil {
		return lk, fmt.Errorf("repo: %s: inspect %s: %w", in.r.c.name, key, err)
	}
	if p.State != cacheaside.PeekValue && p.State != cacheaside.PeekNotFound {
		return lk.As(inspect.Skip), nil
	}
	id, err := in.dec(key)
	if err != nil {
		return lk.As(inspect.Skip), nil
	}
	row, found, err := in.read(ctx, key, id)
	if err != nil {
		return lk, err
	}
	var stored []byte
	lk.Stored = "not found"
	if found {
		if stored, err = ent.Encode(row); err != nil {
			return lk, err
		}
		lk.Stored = string(stored)
	}
	if p.State == cacheaside.PeekNotFound {
		lk.Cached = "not found"
		if found {
			return lk.As(inspect.FalseNotFound), nil
		}
		return lk, nil
	}
	lk.Cached = string(p.Value)
	switch {
	case !found:
		return lk.As(inspect.Ghost), nil
	case bytes.Equal(stored, p.Value):
		return lk, nil
	}
	// A codec whose encoding is not canonical (map order): compare values.
	cv, err1 := ent.Decode(p)
	sv, err2 := ent.Decode(cacheaside.Peeked{Key: p.Key, State: cacheaside.PeekValue, Value: stored})
	if err1 == nil && err2 == nil && reflect.DeepEqual(cv, sv) {
		return lk, nil
	}
	return lk.As(inspect.Stale), nil
}

// read reads the row id from the database, paced.
func (in *inspection[T, ID]) read(ctx context.Context, key string, id ID) (row T, found bool, err error) {
	if err := in.run.Pace(ctx); err != nil {
		return row, false, err
	}
	row, err = in.r.loadOne(ctx, key, id)
	switch {
	case err == nil:
		return row, true, nil
	case errors.Is(err, ErrNotFound):
		return row, false, nil
	}
	return row, false, fmt.Errorf("repo: %s: inspect %s: %w", in.r.c.name, key, err)
}

// lookMapping compares the cached mapping of l's value key with the
// database.
func (in *inspection[T, ID]) lookMapping(ctx context.Context, l *lookup[ID], key string) (inspect.Look, error) {
	p, err := l.ent.Peek(ctx, key)
	lk := inspect.Look{Entity: l.name, ID: key, Entry: entryOf(p)}
	if err != nil {
		return lk, fmt.Errorf("repo: %s: inspect %s: %w", l.name, key, err)
	}
	switch p.State {
	case cacheaside.PeekValue:
		id, err := l.ent.Decode(p)
		if err != nil {
			return lk.As(inspect.Skip), nil
		}
		idk, err := in.r.c.idKey(id)
		if err != nil {
			return lk.As(inspect.Skip), nil
		}
		lk.Cached = idk
		row, found, err := in.read(ctx, idk, id)
		if err != nil {
			return lk, err
		}
		if !found {
			lk.Stored = "no row " + idk
			return lk.As(inspect.DivergentMapping), nil
		}
		got, ok, _ := l.key(ctx, reflect.ValueOf(&row).Elem())
		lk.Stored = "row " + idk + " holds " + got
		if ok && got == key {
			return lk, nil
		}
		return lk.As(inspect.DivergentMapping), nil
	case cacheaside.PeekNotFound:
		if len(l.fields) != 1 {
			return lk.As(inspect.Skip), nil
		}
		lk.Cached = "not found"
		if err := in.run.Pace(ctx); err != nil {
			return lk, err
		}
		f := l.fields[0]
		col := clause.Column{Table: clause.CurrentTable, Name: f.DBName}
		var cond clause.Expression = clause.Eq{Column: col, Value: key}
		if t := f.FieldType; t.Kind() != reflect.String && (t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.String) {
			cond = clause.Expr{SQL: "CAST(? AS TEXT) = ?", Vars: []any{col, key}}
		}
		var ids []ID
		err := in.r.c.primary(ctx).Model(new(T)).Where(cond).Limit(1).Pluck(in.r.c.pk.DBName, &ids).Error
		if err != nil {
			return lk, fmt.Errorf("repo: %s: inspect %s: %w", l.name, key, err)
		}
		if len(ids) == 0 {
			lk.Stored = "not found"
			return lk, nil
		}
		idk, _ := in.r.c.idKey(ids[0])
		lk.Stored = "row " + idk
		return lk.As(inspect.DivergentMapping), nil
	}
	return lk.As(inspect.Skip), nil
}

// filterWalk walks the table's primary keys in pages and asks the Bloom
// filter about them: an existing row it says is absent is a suspect, to be
// confirmed Grace later (the add of a row being created is in flight).
func (in *inspection[T, ID]) filterWalk() inspect.Walk {
	c := in.r.c
	col := clause.Column{Table: clause.CurrentTable, Name: c.pk.DBName}
	var last ID
	started := false
	return func(ctx context.Context) (bool, error) {
		if err := in.run.Pace(ctx); err != nil {
			return false, err
		}
		q := c.primary(ctx).Model(new(T)).Order(clause.OrderByColumn{Column: col}).Limit(in.o.SampleSize)
		if started {
			q = q.Where(clause.Gt{Column: col, Value: last})
		}
		var ids []ID
		if err := q.Pluck(c.pk.DBName, &ids).Error; err != nil {
			return false, fmt.Errorf("repo: %s: inspect filter: %w", c.name, err)
		}
		if len(ids) == 0 {
			return true, nil
		}
		keys := make([]string, len(ids))
		for i, id := range ids {
			k, err := c.idKey(id)
			if err != nil {
				return false, err
			}
			keys[i] = k
		}
		maybe, err := c.filter.MightContainMany(ctx, keys)
		if err != nil {
			return false, fmt.Errorf("repo: %s: inspect filter: %w", c.name, err)
		}
		for i, ok := range maybe {
			if in.run.Over() {
				return false, nil
			}
			last, started = ids[i], true
			if ok {
				in.run.Count(inspect.Consistent)
				continue
			}
			id, key := ids[i], keys[i]
			lk := inspect.Look{Kind: inspect.FalseNotFound, Entity: c.name, ID: key, Cached: "absent from the filter"}
			in.run.Suspect(lk, func(ctx context.Context) (inspect.Look, error) {
				ok, err := c.filter.MightContain(ctx, key)
				if err != nil || ok {
					return lk.As(inspect.Consistent), err
				}
				row, found, err := in.read(ctx, key, id)
				if err != nil || !found {
					return lk.As(inspect.Consistent), err
				}
				lk := lk
				if b, err := c.ent.Encode(row); err == nil {
					lk.Stored = string(b)
				}
				return lk, nil
			}, func(ctx context.Context) error { return c.filter.Add(ctx, key) })
		}
		return len(ids) < in.o.SampleSize, nil
	}
}

// entryOf is what the inspector keeps of a peeked entry.
func entryOf(p cacheaside.Peeked) inspect.Entry {
	return inspect.Entry{Key: p.Key, Version: p.Version, State: int(p.State), Raw: p.Raw}
}
