package repo

// This file holds the one rule of what a committed row change does to the
// cache. Every writer (Create, Put, Update, Delete, the Many forms,
// InsertIfAbsent, transactions) and the change-data-capture bridge describe
// their change as a rowChange and queue the work planChange returns; no
// other code decides what to invalidate or add.

// rowKeys are a row's cache ids on one side of a change: its primary key's
// ("" when unknown) and one per lookup (ok false when a value is unknown
// or NULL: either way the row has no known mapping there).
type rowKeys struct {
	id  string
	uks []oldKey
}

// oldKey is a row's key in one lookup; ok is false when the value is
// unknown or NULL.
type oldKey struct {
	key string
	ok  bool
}

// rowChange is a committed change to one row.
type rowChange struct {
	// before is the row before the change: nil when there was none (an
	// insert). Its id may be "" and its lookups not ok when the writer did
	// not read them.
	before *rowKeys
	// after is the row after the change, nil when it is gone (a delete).
	after *rowKeys
}

// shape is what of the cache a repository has: a Bloom filter over
// primary keys, and per lookup whether it has a filter of its values.
type shape struct {
	filter  bool
	filters []bool // one per lookup
}

// plan is the cache work a change needs.
type plan struct {
	ids       []string   // entity ids to invalidate (drops rows and cached "not found")
	filterIDs []string   // ids to add to the primary-key filter
	maps      [][]string // per lookup: values whose mapping (or cached "not found") to drop
	adds      [][]string // per lookup: values to add to its filter
}

// planChange returns the cache work of ch in a repository of shape s:
//
//   - the row's id is invalidated, and its old id when the key changed;
//   - an id that did not exist before (no row before, or another id) is
//     added to the primary-key filter;
//   - per lookup, when the value changed (or is unknown before, or the
//     row's id changed), the old and the new value's mappings are dropped
//     and the new value is added to the lookup's filter; an unchanged
//     value of the same row needs nothing.
//
// It is pure: what cannot be cached (a value too long for a key) is left
// to the caller to skip.
func planChange(ch rowChange, s shape) plan {
	var p plan
	before, after := ch.before, ch.after
	var was, now []oldKey
	moved := false
	if before != nil {
		was = before.uks
		if before.id != "" && (after == nil || before.id != after.id) {
			p.ids = append(p.ids, before.id)
			moved = after != nil && after.id != ""
		}
	}
	if after != nil {
		now = after.uks
		if after.id != "" {
			p.ids = append(p.ids, after.id)
			if s.filter && (before == nil || before.id != after.id) {
				p.filterIDs = append(p.filterIDs, after.id)
			}
		}
	}
	p.maps = make([][]string, len(s.filters))
	p.adds = make([][]string, len(s.filters))
	for i, filtered := range s.filters {
		var w, n oldKey
		if was != nil {
			w = was[i]
		}
		if now != nil {
			n = now[i]
		}
		if w.ok && n.ok && w.key == n.key && !moved {
			continue // the same row keeps its value: its mapping holds
		}
		if w.ok {
			p.maps[i] = append(p.maps[i], w.key)
		}
		if n.ok {
			if !w.ok || w.key != n.key {
				p.maps[i] = append(p.maps[i], n.key)
			}
			if filtered {
				p.adds[i] = append(p.adds[i], n.key)
			}
		}
	}
	return p
}
