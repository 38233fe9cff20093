package repo

import (
	"context"
	"fmt"
	"reflect"

	"gorm.io/gorm/clause"
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

// keysOf returns the cache ids of the row with column values vals (by
// database column name; an absent or nil value is unknown).
func (c *core[T, ID]) keysOf(ctx context.Context, vals map[string]any) (*rowKeys, error) {
	rv := reflect.New(c.sch.ModelType).Elem()
	k := &rowKeys{uks: make([]oldKey, len(c.lookups))}
	set := func(name string) (known bool, err error) {
		v, ok := vals[name]
		if !ok || v == nil {
			return false, nil
		}
		f := c.sch.LookUpField(name)
		if err := f.Set(ctx, rv, v); err != nil {
			return false, fmt.Errorf("%w: %s: column %s: %w", ErrInvalidID, c.name, name, err)
		}
		return true, nil
	}
	known, err := set(c.pk.DBName)
	if err != nil {
		return nil, err
	}
	if known {
		id, _ := c.idOf(ctx, rv.Addr().Interface().(*T))
		if k.id, err = c.cacheID(id); err != nil {
			return nil, err
		}
	}
	for i, l := range c.lookups {
		all := true
		for _, f := range l.fields {
			ok, err := set(f.DBName)
			if err != nil {
				return nil, err
			}
			all = all && ok
		}
		if all {
			if k.uks[i].key, k.uks[i].ok, err = l.key(ctx, rv); err != nil {
				return nil, err
			}
		}
	}
	qs := c.lists.all()
	k.lists = make([]listKey, len(qs))
	for i, q := range qs {
		all := true
		for _, f := range q.cols {
			ok, err := set(f.DBName)
			if err != nil {
				return nil, err
			}
			all = all && ok
		}
		if all {
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
// can move it between this read and the write.
func (r *Repository[T, ID]) readBefore(ctx context.Context, id ID, key string) (*rowKeys, error) {
	if len(r.c.lookups) == 0 && r.c.lists.len() == 0 {
		return &rowKeys{id: key}, nil
	}
	var rows []T
	if err := r.lockBefore(r.conn(ctx)).Select(r.c.keyCols()).Where(r.c.pkEq(id)).Limit(1).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("repo: %s: read unique columns before the write: %w", r.c.name, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	uks, err := r.c.uniqueKeysOf(ctx, &rows[0])
	if err != nil {
		return nil, err
	}
	return &rowKeys{id: key, uks: uks, lists: r.c.lists.keysOf(ctx, reflect.ValueOf(&rows[0]).Elem())}, nil
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
	if err := r.lockBefore(r.conn(ctx)).Select(c.keyCols()).Where(in).Find(&rows).Error; err != nil {
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
