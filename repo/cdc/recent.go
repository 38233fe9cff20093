package cdc

import (
	"maps"
	"slices"
	"strconv"

	"github.com/asidekit/asidekit/internal/rowchange"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// recentRows is what a session remembers of the rows it applied: per
// registered table whose replica identity is not FULL, per replica
// identity key, the row as the last change of it in the log left it,
// restricted to the columns the table's cache keys use (table.KeyColumns).
//
// With the default identity the log carries an UPDATE without the old row
// (the key did not change) or with the old key alone, so the repository
// must take every unique and list value as changed: drop the new value's
// mapping, add it to the filter, bump the lists. But the log is the
// table's changes in commit order, and the session reads all of them: the
// row before an UPDATE is the row after the last change of its key that
// the session read, if it read one. Such an UPDATE is then applied as with
// REPLICA IDENTITY FULL (an unchanged value costs nothing). What could
// break that, the session forgets: a key it cannot compute, a change it
// could not decode or queue (the table's rows), a Relation message that changes the
// table's columns, a TRUNCATE (the table's rows), a message it could not
// parse and a recreated slot (every table). A new session starts empty.
type recentRows struct {
	limit int // the most rows remembered; 0: none
	n     int
	rels  map[uint32]map[string]rowchange.Row
}

// The replica identities (pg_class.relreplident) recentRows leaves alone:
// FULL, whose log carries every old row, and NOTHING, whose has no key.
const (
	identityFull    = 'f'
	identityNothing = 'n'
)

// maxRecentBytes is the most text of the kept columns a remembered row
// may have: a row with more is not remembered (its next UPDATE takes the
// safe path), so that the memory stays about limit small rows.
const maxRecentBytes = 512

// forget drops what is remembered of relation rel.
func (m *recentRows) forget(rel uint32) {
	m.n -= len(m.rels[rel])
	delete(m.rels, rel)
}

// forgetAll drops everything remembered.
func (m *recentRows) forgetAll() { m.rels, m.n = nil, 0 }

// use completes ch, a change of relation r (ID rel) decoded without error,
// with the row before it when the session remembers it and the log left it
// out (or carried its key alone), and remembers the row after it.
func (m *recentRows) use(rel uint32, r *relation, ch *rowchange.Change) {
	if m.limit <= 0 || r.target == nil || r.identity == identityFull || r.identity == identityNothing {
		return
	}
	rows := m.rels[rel]
	if ch.Kind != rowchange.Insert && ch.Old != nil { // a delete, or an update of the key
		k, ok := r.keyOf(ch.Old)
		if !ok {
			m.forget(rel)
			return
		}
		if old, ok := rows[k]; ok {
			ch.Old = old // the whole row (its kept columns), not the key alone
			delete(rows, k)
			m.n--
		}
	}
	if ch.Kind == rowchange.Delete {
		return
	}
	k, ok := r.keyOf(ch.New)
	if !ok {
		m.forget(rel)
		return
	}
	if ch.Kind == rowchange.Update && ch.Old == nil {
		if old, ok := rows[k]; ok {
			ch.Old = old
			if testswitch.RecentRowsFrozen.Load() {
				return // the rule off: the row stays as first remembered
			}
		}
	}
	row := r.keep(ch.New)
	if row == nil {
		if _, ok := rows[k]; ok {
			delete(rows, k)
			m.n--
		}
		return
	}
	if rows == nil {
		if m.rels == nil {
			m.rels = map[uint32]map[string]rowchange.Row{}
		}
		rows = map[string]rowchange.Row{}
		m.rels[rel] = rows
	}
	if _, ok := rows[k]; !ok {
		if m.n >= m.limit {
			m.evict()
		}
		m.n++
	}
	rows[k] = row
}

// evict drops one remembered row, of any table: the one a map iteration
// starts at, which Go randomizes. A table's map stays, empty or not: the
// caller may be about to add to it.
func (m *recentRows) evict() {
	for _, rows := range m.rels {
		for k := range rows {
			delete(rows, k)
			m.n--
			return
		}
	}
}

// sameLayout reports whether r and o (nil: none) describe the same
// columns, types, replica identity and kept columns: PostgreSQL sends a
// table's Relation message again after any invalidation of its cached
// description (an ANALYZE too), and the rows remembered under o hold
// for r only if nothing of that changed.
func (r *relation) sameLayout(o *relation) bool {
	return o != nil && r.identity == o.identity && slices.Equal(r.cols, o.cols) &&
		slices.Equal(r.types, o.types) && slices.Equal(r.key, o.key) && maps.Equal(r.keyCols, o.keyCols)
}

// keyOf returns the replica identity key of row as a map key, and false
// when row lacks one of its columns or r has none.
func (r *relation) keyOf(row rowchange.Row) (string, bool) {
	var b []byte
	found := false
	for i, name := range r.cols {
		if !r.key[i] {
			continue
		}
		c, ok := row.Lookup(name)
		if !ok {
			return "", false
		}
		found = true
		if c.Null {
			b = append(b, 'n')
			continue
		}
		b = strconv.AppendInt(append(b, 't'), int64(len(c.Text)), 10)
		b = append(append(b, ':'), c.Text...)
	}
	return string(b), found
}

// keep returns row's columns that the table's keys use, with their text
// copied into one buffer (a change's text shares its message's bytes), or
// nil when their text passes maxRecentBytes.
func (r *relation) keep(row rowchange.Row) rowchange.Row {
	out := make(rowchange.Row, 0, len(r.keyCols))
	size := 0
	for _, c := range row {
		if r.keyCols[c.Name] {
			out = append(out, c)
			size += len(c.Text)
		}
	}
	if size > maxRecentBytes {
		return nil
	}
	buf := make([]byte, 0, size)
	for i := range out {
		if out[i].Null {
			continue
		}
		start := len(buf)
		buf = append(buf, out[i].Text...)
		out[i].Text = buf[start:len(buf):len(buf)]
	}
	return out
}
