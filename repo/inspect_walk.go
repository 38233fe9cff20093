package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
)

// skip is lookRow's and lookMapping's verdict for an entry they cannot
// judge.
const skip InspectKind = -1

// secondLook is off only in the test that shows what the second look
// prevents: every suspect then counts at once.
var secondLook = true

// over reports that the run must stop taking new items: For has passed,
// or Max items are judged or waiting.
func (in *inspection[T, ID]) over() bool {
	if in.o.Max > 0 && int(in.rep.Inspected)+len(in.suspects) >= in.o.Max {
		return true
	}
	return !in.stop.IsZero() && !time.Now().Before(in.stop)
}

// entryWalk walks ent's cached entries, judging each with lookAt.
func entryWalk[V any, T any, ID comparable](in *inspection[T, ID], ent *cacheaside.Entity[V], lookAt func(context.Context, string) (look, InspectKind, error)) walk {
	var cur cacheaside.Cursor
	return func(ctx context.Context) (bool, error) {
		ids, next, err := ent.SampleIDs(ctx, cur, in.o.SampleSize)
		if err != nil {
			return false, fmt.Errorf("repo: %s: inspect: %w", in.r.c.name, err)
		}
		for _, id := range ids {
			if in.over() {
				return false, nil
			}
			if err := in.judge(ctx, id, lookAt, func(ctx context.Context) error { return ent.Invalidate(ctx, id) }); err != nil {
				return false, err
			}
		}
		cur = next
		return cur.Done(), nil
	}
}

// judge looks at one entry and counts it, or makes it a suspect whose
// second look must see the same entry disagree the same way.
func (in *inspection[T, ID]) judge(ctx context.Context, id string, lookAt func(context.Context, string) (look, InspectKind, error), repair func(context.Context) error) error {
	first, k, err := lookAt(ctx, id)
	switch {
	case err != nil:
		return err
	case k == skip:
		in.count(func(s *InspectStats) { s.Skipped++ })
	case k == 0:
		in.judged(0)
	case !secondLook:
		in.count(func(s *InspectStats) { s.Suspects++ })
		in.violation(ctx, k, first, repair)
	default:
		in.suspect(suspect{kind: k, first: first, repair: repair, again: func(ctx context.Context) (InspectKind, look, error) {
			second, k, err := lookAt(ctx, id)
			if err != nil || !sameEntry(first.peek, second.peek) {
				return 0, second, err // replaced or invalidated since: in flight
			}
			return k, second, nil
		}})
	}
	return nil
}

// lookRow compares the cached entry of the row id with the database.
func (in *inspection[T, ID]) lookRow(ctx context.Context, key string) (look, InspectKind, error) {
	ent := in.r.c.ent
	p, err := ent.Peek(ctx, key)
	lk := look{entity: in.r.c.name, id: key, peek: p}
	if err != nil {
		return lk, 0, fmt.Errorf("repo: %s: inspect %s: %w", in.r.c.name, key, err)
	}
	if p.State != cacheaside.PeekValue && p.State != cacheaside.PeekNotFound {
		return lk, skip, nil
	}
	id, err := in.dec(key)
	if err != nil {
		return lk, skip, nil
	}
	row, found, err := in.read(ctx, key, id)
	if err != nil {
		return lk, 0, err
	}
	var stored []byte
	lk.stored = "not found"
	if found {
		if stored, err = ent.Encode(row); err != nil {
			return lk, 0, err
		}
		lk.stored = string(stored)
	}
	if p.State == cacheaside.PeekNotFound {
		lk.cached = "not found"
		if found {
			return lk, FalseNotFound, nil
		}
		return lk, 0, nil
	}
	lk.cached = string(p.Value)
	switch {
	case !found:
		return lk, Ghost, nil
	case bytes.Equal(stored, p.Value):
		return lk, 0, nil
	}
	// A codec whose encoding is not canonical (map order): compare values.
	cv, err1 := ent.Decode(p)
	sv, err2 := ent.Decode(cacheaside.Peeked{Key: p.Key, State: cacheaside.PeekValue, Value: stored})
	if err1 == nil && err2 == nil && reflect.DeepEqual(cv, sv) {
		return lk, 0, nil
	}
	return lk, Stale, nil
}

// read reads the row id from the database, paced.
func (in *inspection[T, ID]) read(ctx context.Context, key string, id ID) (row T, found bool, err error) {
	if err := in.pace.wait(ctx); err != nil {
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
func (in *inspection[T, ID]) lookMapping(ctx context.Context, l *lookup[ID], key string) (look, InspectKind, error) {
	p, err := l.ent.Peek(ctx, key)
	lk := look{entity: l.name, id: key, peek: p}
	if err != nil {
		return lk, 0, fmt.Errorf("repo: %s: inspect %s: %w", l.name, key, err)
	}
	switch p.State {
	case cacheaside.PeekValue:
		id, err := l.ent.Decode(p)
		if err != nil {
			return lk, skip, nil
		}
		idk, err := in.r.c.idKey(id)
		if err != nil {
			return lk, skip, nil
		}
		lk.cached = idk
		row, found, err := in.read(ctx, idk, id)
		if err != nil {
			return lk, 0, err
		}
		if !found {
			lk.stored = "no row " + idk
			return lk, DivergentMapping, nil
		}
		got, ok, _ := l.key(ctx, reflect.ValueOf(&row).Elem())
		lk.stored = "row " + idk + " holds " + got
		if ok && got == key {
			return lk, 0, nil
		}
		return lk, DivergentMapping, nil
	case cacheaside.PeekNotFound:
		if len(l.fields) != 1 {
			return lk, skip, nil
		}
		lk.cached = "not found"
		if err := in.pace.wait(ctx); err != nil {
			return lk, 0, err
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
			return lk, 0, fmt.Errorf("repo: %s: inspect %s: %w", l.name, key, err)
		}
		if len(ids) == 0 {
			lk.stored = "not found"
			return lk, 0, nil
		}
		idk, _ := in.r.c.idKey(ids[0])
		lk.stored = "row " + idk
		return lk, DivergentMapping, nil
	}
	return lk, skip, nil
}

// filterWalk walks the table's primary keys in pages and asks the Bloom
// filter about them: an existing row it says is absent is a suspect, to be
// confirmed Grace later (the add of a row being created is in flight).
func (in *inspection[T, ID]) filterWalk() walk {
	c := in.r.c
	col := clause.Column{Table: clause.CurrentTable, Name: c.pk.DBName}
	var last ID
	started := false
	return func(ctx context.Context) (bool, error) {
		if err := in.pace.wait(ctx); err != nil {
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
			if in.over() {
				return false, nil
			}
			last, started = ids[i], true
			if ok {
				in.judged(0)
				continue
			}
			id, key := ids[i], keys[i]
			lk := look{entity: c.name, id: key, cached: "absent from the filter"}
			in.suspect(suspect{kind: FalseNotFound, first: lk, again: func(ctx context.Context) (InspectKind, look, error) {
				ok, err := c.filter.MightContain(ctx, key)
				if err != nil || ok {
					return 0, lk, err
				}
				row, found, err := in.read(ctx, key, id)
				if err != nil || !found {
					return 0, lk, err
				}
				lk := lk
				if b, err := c.ent.Encode(row); err == nil {
					lk.stored = string(b)
				}
				return FalseNotFound, lk, nil
			}, repair: func(ctx context.Context) error { return c.filter.Add(ctx, key) }})
		}
		return len(ids) < in.o.SampleSize, nil
	}
}
