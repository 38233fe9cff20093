package repo

import (
	"context"
	"fmt"
	"reflect"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/internal/rowchange"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// keysOfRow returns row's cache ids: its primary key's and one per lookup.
func (c *core[T, ID]) keysOfRow(ctx context.Context, row *T) (*rowKeys, error) {
	id, ok := c.idOf(ctx, row)
	if !ok {
		return nil, fmt.Errorf("%w: %s: a written row without its primary key", ErrInvalidID, c.name)
	}
	key, err := c.cacheID(id)
	if err != nil {
		return nil, err
	}
	uks, err := c.uniqueKeysOf(ctx, row)
	if err != nil {
		return nil, err
	}
	return &rowKeys{id: key, uks: uks, lists: c.lists.keysOf(ctx, reflect.ValueOf(row).Elem())}, nil
}

// uniqueKeysOf returns row's key in each lookup.
func (c *core[T, ID]) uniqueKeysOf(ctx context.Context, row *T) ([]oldKey, error) {
	rv := reflect.ValueOf(row).Elem()
	keys := make([]oldKey, len(c.lookups))
	for i, l := range c.lookups {
		var err error
		if keys[i].key, keys[i].ok, err = l.key(ctx, rv); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// valueState is what a change tells of one column's value.
type valueState uint8

const (
	valueUnknown valueState = iota // not in the change
	valueKnown                     // set on the model; NULL is the field's zero value
	valueLost                      // in the change, but it could not be decoded
)

// keysOf returns the cache ids of the row with column values vals (Go
// values, by database column name; an absent or nil value is unknown). A
// value the model's field does not take is an error matching
// ErrInvalidID.
func (c *core[T, ID]) keysOf(ctx context.Context, vals map[string]any) (*rowKeys, error) {
	return c.keysBy(ctx, true, func(f *schema.Field, rv reflect.Value) (valueState, error) {
		v, ok := vals[f.DBName]
		if !ok || v == nil {
			return valueUnknown, nil
		}
		if err := f.Set(ctx, rv, v); err != nil {
			return valueLost, fmt.Errorf("%w: %s: column %s: %w", ErrInvalidID, c.name, f.DBName, err)
		}
		return valueKnown, nil
	})
}

// keysOfLog returns the cache ids of the row the log carries as row (see
// rowchange.Row), each value decoded by its PostgreSQL type into its
// field's Go type (logTypes), never parsed as text. A column row lacks is
// unknown; a NULL is known. A value that cannot be decoded is lost: the
// keys it is part of say so (rowKeys.idLost, oldKey.lost, a listKey not
// ok), and its column is in undecoded.
func (c *core[T, ID]) keysOfLog(ctx context.Context, row rowchange.Row) (k *rowKeys, undecoded []rowchange.Undecoded) {
	k, _ = c.keysBy(ctx, false, func(f *schema.Field, rv reflect.Value) (valueState, error) { // never fails
		col, ok := row.Lookup(f.DBName)
		switch {
		case !ok:
			return valueUnknown, nil
		case col.Null:
			return valueKnown, nil // the model is new: the field is zero
		}
		fv := f.ReflectValueOf(ctx, rv)
		if err := logTypes.scan(col.Type, col.Text, fv.Addr().Interface()); err != nil {
			fv.SetZero()
			undecoded = append(undecoded, rowchange.Undecoded{Column: f.DBName,
				Err: fmt.Errorf("%s: a value of type oid %d (%q) into %s: %w", c.name, col.Type, clip(col.Text), f.FieldType, err)})
			return valueLost, nil
		}
		return valueKnown, nil
	})
	return k, undecoded
}

// clip shortens a value for a log line.
func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// keysBy returns the cache ids of a new model whose columns set sets:
// set puts a column's value on the model rv and says what it knew of it;
// an error from set ends keysBy with it. Each column is set once. strict
// makes a primary key or unique value that cannot be keyed an error;
// otherwise the key is lost and the value has no mapping, respectively.
func (c *core[T, ID]) keysBy(ctx context.Context, strict bool, set func(f *schema.Field, rv reflect.Value) (valueState, error)) (*rowKeys, error) {
	rv := reflect.New(c.sch.ModelType).Elem()
	k := &rowKeys{uks: make([]oldKey, len(c.lookups))}
	type seen struct {
		f *schema.Field
		s valueState
	}
	var done [16]seen
	memo := done[:0]
	state := func(f *schema.Field) (valueState, error) {
		for _, m := range memo {
			if m.f == f {
				return m.s, nil
			}
		}
		s, err := set(f, rv)
		memo = append(memo, seen{f, s})
		return s, err
	}
	// states returns the worst state among fields: unknown < known < lost
	// is not an order, so lost wins, then unknown.
	states := func(fields []*schema.Field) (valueState, error) {
		all := valueKnown
		for _, f := range fields {
			s, err := state(f)
			if err != nil {
				return s, err
			}
			if s == valueLost || (s == valueUnknown && all == valueKnown) {
				all = s
			}
		}
		return all, nil
	}
	s, err := state(c.pk)
	if err != nil {
		return nil, err
	}
	switch s {
	case valueKnown:
		id, _ := c.idOf(ctx, rv.Addr().Interface().(*T))
		if k.id, err = c.cacheID(id); err != nil {
			if strict {
				return nil, err
			}
			k.idLost = true // no key to invalidate: take the safe path
		}
	case valueLost:
		k.idLost = true
	}
	for i, l := range c.lookups {
		s, err := states(l.fields)
		if err != nil {
			return nil, err
		}
		switch s {
		case valueKnown:
			if k.uks[i].key, k.uks[i].ok, err = l.key(ctx, rv); err != nil {
				if strict {
					return nil, err
				}
				// GetBy refuses a value it cannot key: it has no mapping.
				k.uks[i] = oldKey{}
			}
		case valueLost:
			k.uks[i].lost = true
		}
	}
	qs := c.lists.all()
	if len(qs) > 0 && k.id != "" {
		id, _ := c.idOf(ctx, rv.Addr().Interface().(*T))
		k.idJSON = idJSON(id)
	}
	k.lists = make([]listKey, len(qs))
	for i, q := range qs {
		s, err := states(q.cols)
		if err != nil {
			return nil, err
		}
		if s == valueKnown {
			k.lists[i] = q.keyOf(ctx, rv)
		}
	}
	return k, nil
}

// readBefore reads the keys of row id (cache id key) before a write that
// replaces it. Without unique keys and declared queries nothing is read,
// and the result is the id alone ("the row may exist"); with them, nil
// means the row is absent. In a transaction on PostgreSQL, with declared
// queries, the row is locked (FOR UPDATE), so that no concurrent writer
// can move it between this read and the write; outside a transaction the
// guard returned makes the write's statement change the row only as read
// (see guard). Outside a transaction, a repository without declared
// queries first looks for the row in its cache (cachedBefore).
func (r *Repository[T, ID]) readBefore(ctx context.Context, id ID, key string) (*rowKeys, guard, error) {
	if len(r.c.lookups) == 0 && r.c.lists.len() == 0 {
		return &rowKeys{id: key}, nil, nil
	}
	if r.tx == nil && r.c.lists.len() == 0 { // (a transaction's read locks the row)
		if k, g := r.cachedBefore(ctx, key); k != nil {
			return k, g, nil
		}
	}
	var rows []T
	db, locked := r.lockBefore(r.conn(ctx))
	cols := r.c.keyCols()
	// A soft-deleted row is locked too, and reads as absent: Create and
	// Put take it over, and unlocked their upserts race the other
	// writes of it (see upsertRaced).
	unscoped := locked && r.c.softDel != nil
	if unscoped {
		db, cols = db.Unscoped(), append(cols, r.c.softDel.DBName)
	}
	if err := db.Select(cols).Where(r.c.pkEq(id)).Limit(1).Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("repo: %s: read unique columns before the write: %w", r.c.name, err)
	}
	if len(rows) == 0 || unscoped && !isNull(r.c.softDel, ctx, reflect.ValueOf(&rows[0]).Elem()) {
		return nil, nil, nil
	}
	uks, err := r.c.uniqueKeysOf(ctx, &rows[0])
	if err != nil {
		return nil, nil, err
	}
	rv := reflect.ValueOf(&rows[0]).Elem()
	var g guard
	if r.tx == nil {
		g = r.c.guardOf(ctx, rv)
	}
	return &rowKeys{id: key, uks: uks, lists: r.c.lists.keysOf(ctx, rv)}, g, nil
}

// cachedBefore is readBefore from the entity cache, without a SELECT:
// the row's unique keys as its cached value holds them, and the guard of
// those values, when the row is cached (Entity.Cached: near cache, else
// one Redis GET) and the guard holds every column read. A cached value
// may be older than the row (a write in flight, or a plain-SQL one): the
// guarded statement then changes nothing and the write runs again in a
// transaction that reads the row locked, as for a row changed between a
// SELECT and the statement. readBefore calls it outside transactions
// (whose read locks the row) and without declared queries (their places
// are read from the database). nil when the row is not cached, or when a
// column of the guard would be left out (a type "=" may not compare as
// read).
func (r *Repository[T, ID]) cachedBefore(ctx context.Context, key string) (*rowKeys, guard) {
	if testswitch.CachedBeforeOff.Load() {
		return nil, nil
	}
	row, ok := r.c.ent.Cached(ctx, key)
	if !ok {
		return nil, nil
	}
	rv := reflect.ValueOf(&row).Elem()
	g := r.c.guardOf(ctx, rv)
	switch {
	case testswitch.CachedBeforeUnguarded.Load():
		g = nil // the rule off: the cached values trusted as read
	case len(g) != len(r.c.keyCols())-1:
		return nil, nil
	}
	uks, err := r.c.uniqueKeysOf(ctx, &row)
	if err != nil {
		return nil, nil
	}
	return &rowKeys{id: key, uks: uks, lists: r.c.lists.keysOf(ctx, rv)}, g
}

// readBeforeMany is readBefore for the rows of batch, with one SELECT …
// IN; a row absent from the map is absent from the table (or, without
// unique keys, unread: the map is nil then).
func (r *Repository[T, ID]) readBeforeMany(ctx context.Context, batch []T) (map[ID]*rowKeys, error) {
	c := r.c
	if len(c.lookups) == 0 && c.lists.len() == 0 {
		return nil, nil
	}
	ids := make([]any, len(batch))
	for i := range batch {
		ids[i], _ = c.idOf(ctx, &batch[i])
	}
	var rows []T
	in := clause.IN{Column: clause.Column{Table: clause.CurrentTable, Name: c.pk.DBName}, Values: ids}
	db, _ := r.lockBefore(r.conn(ctx))
	if err := db.Select(c.keyCols()).Where(in).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("repo: %s: read unique columns before the write: %w", c.name, err)
	}
	old := make(map[ID]*rowKeys, len(rows))
	for i := range rows {
		k, err := c.keysOfRow(ctx, &rows[i])
		if err != nil {
			return nil, err
		}
		id, _ := c.idOf(ctx, &rows[i])
		old[id] = k
	}
	return old, nil
}

// keyCols are the columns readBefore reads: the primary key, every
// unique key's and every declared query's.
func (c *core[T, ID]) keyCols() []string {
	cols := []string{c.pk.DBName}
	for _, l := range c.lookups {
		for _, f := range l.fields {
			cols = append(cols, f.DBName)
		}
	}
	for _, q := range c.lists.all() {
		for _, f := range q.cols {
			cols = append(cols, f.DBName)
		}
	}
	return cols
}
