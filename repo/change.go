package repo

import (
	"context"
	"fmt"
	"reflect"
)

// ChangeKind says what a committed change did to a row.
type ChangeKind uint8

// The kinds of row change.
const (
	ChangeInsert ChangeKind = iota + 1
	ChangeUpdate
	ChangeDelete
)

// Change is one committed change to a row of a repository's table, made by
// any writer, as a change-data-capture reader (package repo/cdc) decodes
// it from the database's log.
//
// Old and New hold the row's column values, by database column name,
// before and after the change: nil maps for an insert's Old and a delete's
// New. A column absent from a map is unknown (the log did not carry it); a
// nil value is NULL. A value is anything GORM can set on the field; the
// database's text output works for integers, strings, booleans and uuids.
type Change struct {
	Kind     ChangeKind
	Old, New map[string]any
}

// ChangeSet gathers the cache upkeep of committed changes, of one or more
// repositories, to run in one go: the invalidations of an entity in one
// pipeline, the keys of a Bloom filter in one AddMany. The zero ChangeSet
// is empty and ready; it is not safe for concurrent use.
type ChangeSet struct {
	u upkeep
	n int // ids and keys queued
}

// Len returns the number of ids and filter keys queued.
func (s *ChangeSet) Len() int { return s.n }

// Run does the queued work, every target even when another fails. An
// error matches ErrAfterCommit (Redis failed; the ids it could not
// invalidate are also queued for cacheaside's background retry). Running
// it again does the same work again: invalidations and filter adds are
// idempotent.
func (s *ChangeSet) Run(ctx context.Context) error { return s.u.run(ctx) }

// Reset empties the set.
func (s *ChangeSet) Reset() { *s = ChangeSet{} }

func (s *ChangeSet) invalidate(e invalidator, ids ...string) {
	s.u.invalidate(e, ids...)
	s.n += len(ids)
}

func (s *ChangeSet) add(f adder, name, key string) {
	s.u.add(f, name, key)
	s.n++
}

// AddChange queues in s the cache upkeep of a committed change to a row:
//
//   - insert: add the primary key (and InsertIfAbsent's unique key) to the
//     Bloom filters, and invalidate the id and the mappings of its unique
//     values, dropping any cached "not found";
//   - update: the same for the new row, plus the old id when the primary
//     key changed and the old mappings of unique values that changed
//     (when Old carries them; a mapping left stale is caught by GetBy's
//     check of the row and dropped);
//   - delete: invalidate the id and the mappings of the unique values Old
//     carries.
//
// A change whose primary key is missing or cannot be set on the model is
// an error matching ErrInvalidID, and nothing is queued.
func (r *Repository[T, ID]) AddChange(s *ChangeSet, ch Change) error {
	ctx := context.Background()
	c := r.c
	var old, cur *rowKeys
	var err error
	if ch.Kind != ChangeInsert && ch.Old != nil {
		if old, err = c.keysOf(ctx, ch.Old); err != nil {
			return err
		}
	}
	if ch.Kind != ChangeDelete {
		if cur, err = c.keysOf(ctx, ch.New); err != nil {
			return err
		}
	}
	switch ch.Kind {
	case ChangeInsert, ChangeUpdate:
		if cur.id == "" {
			return fmt.Errorf("%w: %s: change without the primary key %s", ErrInvalidID, c.name, c.pk.DBName)
		}
		if old == nil { // no old row in the log: the key did not change
			old = &rowKeys{id: cur.id, uks: make([]oldKey, len(c.lookups))}
		}
	case ChangeDelete:
		if old == nil || old.id == "" {
			return fmt.Errorf("%w: %s: delete without the primary key %s", ErrInvalidID, c.name, c.pk.DBName)
		}
		s.invalidate(c.ent, old.id)
		for i, l := range c.lookups {
			if k := old.uks[i]; k.ok && l.cacheable(k.key) {
				s.invalidate(l.ent, k.key)
			}
		}
		return nil
	default:
		return fmt.Errorf("repo: %s: unknown change kind %d", c.name, ch.Kind)
	}
	if c.filter != nil {
		s.add(c.filter, c.name, cur.id)
	}
	if l, i := c.uniq, c.uniqIndex(); l != nil && l.filter != nil && i >= 0 {
		if k := cur.uks[i]; k.ok {
			s.add(l.filter, l.name, k.key)
		}
	}
	s.invalidate(c.ent, cur.id)
	if old.id != "" && old.id != cur.id {
		s.invalidate(c.ent, old.id)
	}
	for i, l := range c.lookups {
		was, now := old.uks[i], cur.uks[i]
		was.ok = was.ok && l.cacheable(was.key)
		now.ok = now.ok && l.cacheable(now.key)
		if was.ok && (!now.ok || was.key != now.key) {
			s.invalidate(l.ent, was.key)
		}
		if now.ok && (!was.ok || was.key != now.key) {
			s.invalidate(l.ent, now.key)
		}
	}
	return nil
}

// rowKeys are the cache ids of a row given as column values: its primary
// key's ("" when unknown) and one per lookup (ok false when a column is
// unknown or NULL).
type rowKeys struct {
	id  string
	uks []oldKey
}

// keysOf computes the cache ids of the row with column values vals.
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
	return k, nil
}

// uniqIndex returns the index of InsertIfAbsent's key among the lookups.
func (c *core[T, ID]) uniqIndex() int {
	for i, l := range c.lookups {
		if l == c.uniq {
			return i
		}
	}
	return -1
}
