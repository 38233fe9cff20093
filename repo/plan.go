package repo

import (
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// This file holds the one rule of what a committed row change does to the
// cache. Every writer (Create, Put, Update, Delete, the Many forms,
// InsertIfAbsent, transactions) and the change-data-capture bridge describe
// their change as a rowChange and queue the work planChange returns; no
// other code decides what to invalidate or add.

// rowKeys are a row's cache ids on one side of a change: its primary key's
// ("" when unknown) and one per lookup (ok false when a value is unknown
// or NULL: either way the row has no known mapping there).
type rowKeys struct {
	id    string
	uks   []oldKey
	lists []listKey // one per declared query (NewQuery), in order
	// idLost says that the row's primary key cannot be known from the
	// change although it should be (repo/cdc: a value that could not be
	// decoded, a row without its key): id is "", and the change takes
	// the safe path (see planChange).
	idLost bool
	// idJSON is the primary key as JSON, for a list's patch line: set by
	// keysOfLog when the repository has declared queries, else "".
	idJSON string
}

// listKey is a row's place in one declared query: where encodes its
// filter values (the list it belongs to), rest its order columns' (and
// soft-delete column's) values; ok is false when they are unknown. A
// query missing from rowKeys.lists (declared after the keys were read)
// is unknown too.
type listKey struct {
	where, rest string
	ok          bool
	// order is the row's order key in the list (orderKey), "" when it has
	// none (the query is not patchable, a value is inexact, the row is
	// soft-deleted): a write then bumps the list instead of patching it,
	// unless the row is gone.
	order string
	// gone says that the row is soft-deleted: it is in none of the lists.
	gone bool
}

// oldKey is a row's key in one lookup; ok is false when the value is
// unknown or NULL.
type oldKey struct {
	key string
	ok  bool
	// lost says that the change carried the value but it could not be
	// decoded (repo/cdc): ok is false, and the value may have any mapping.
	lost bool
}

// rowChange is a committed change to one row.
type rowChange struct {
	// before is the row before the change: nil when there was none (an
	// insert). Its id may be "" and its lookups not ok when the writer did
	// not read them.
	before *rowKeys
	// after is the row after the change, nil when it is gone (a delete).
	after *rowKeys
	// earlierApplied says that the upkeep of every earlier change of the
	// table is known applied: true for repo/cdc, which applies the log in
	// commit order. A repository's own write cannot know it: another
	// process's earlier write may have committed while its upkeep waits
	// in that process's retrier (its Redis link cut, ErrAfterCommit), so
	// the write repairs what that upkeep owed its row (see planChange).
	earlierApplied bool
	// covered says that a TRUNCATE's InvalidateAll of the table follows
	// the change (rowchange.Change.Covered): only the filters' additions
	// are queued.
	covered bool
	// seen holds, per declared query, the generations of the lists the
	// writer read before its COMMIT (by filter values), and idJSON the
	// row's primary key as JSON: a list found in seen is patched rather
	// than bumped (see patchOf). nil for every other change.
	seen   []map[string]string
	idJSON string
	// log is where a change read from the database's log (repo/cdc)
	// committed, nil for every other change: a list whose place of the row
	// is known on both sides is patched from it (cacheaside.PatchFromLog)
	// rather than bumped.
	log *cacheaside.LogPos
	// reassert says that a list the row stays in gets its line too (a
	// patch that puts the row where it is, or a bump): the writer's table
	// is fed by repo/cdc, whose lines may not have put the row there yet
	// (see query_check.go). Never for a change from the log.
	reassert bool
	// fill, when set, is the effect that stores the row after the change
	// (cacheaside.StoreIfVersion of after.id; from the log, StoreFromLog
	// of after.id, or AbsentFromLog of before.id for a DELETE), done
	// instead of invalidating it; nil for every other change.
	fill *cacheaside.Effect
}

// fillID is the id ch.fill stores: the row's after the change, or before
// it for a change that left none.
func (ch rowChange) fillID() string {
	if ch.after != nil {
		return ch.after.id
	}
	if ch.before != nil {
		return ch.before.id
	}
	return ""
}

// shape is what of the cache a repository has: a Bloom filter over
// primary keys, and per lookup whether it has a filter of its values.
type shape struct {
	filter  bool
	filters []bool // one per lookup
	lists   int    // declared queries
}

// plan is the cache work a change needs.
type plan struct {
	ids       []string   // entity ids to invalidate (drops rows and cached "not found")
	filterIDs []string   // ids to add to the primary-key filter
	maps      [][]string // per lookup: values whose mapping (or cached "not found") to drop
	adds      [][]string // per lookup: values to add to its filter
	lists     [][]string // per query: filter values whose generation to bump
	allLists  []bool     // per query: bump the generation of all its lists
	// allIDs invalidates every cached row of the entity, and distrust
	// distrusts the primary-key filter: a change whose key was lost.
	allIDs, distrust bool
	// allMaps, per lookup, drops every mapping and distrusts the lookup's
	// filter: a change whose new value of the key was lost.
	allMaps []bool
}

// planChange returns the cache work of ch in a repository of shape s:
//
//   - the row's id is invalidated, and its old id when the key changed;
//   - an id that did not exist before (no row before, or another id) is
//     added to the primary-key filter;
//   - per lookup, when the value changed (or is unknown before, or the
//     row's id changed), the old and the new value's mappings are dropped
//     and the new value is added to the lookup's filter; an unchanged
//     value of the same row needs nothing;
//   - per declared query, the generations of the lists of the old and the
//     new row's filter values are bumped, unless the same row keeps its
//     filter and order values (a change elsewhere leaves the lists of ids
//     alone); when either side's values are unknown, the generation of all
//     the query's lists is bumped instead (the fallback).
//
// A value the change carried but that could not be decoded (rowKeys.idLost,
// oldKey.lost: repo/cdc) gets the safe superset of that work. A lost
// primary key invalidates every cached row of the entity (and, on the row
// after the change, distrusts the primary-key filter, which lacks the
// id); the lists it places the row in are unknown, so they are bumped
// whole. A lost new value of a unique key drops every mapping of the key
// and distrusts its filter (its "not found" answers and the filter may
// lack the value); a lost old value is as unknown: GetBy checks the row a
// mapping names.
//
// "Needs nothing" holds when every earlier change's upkeep is applied
// (ch.earlierApplied: repo/cdc). When it is not known to be (a
// repository's own write), an earlier write of the row by another process
// may have committed with its filter adds and its drop of a cached "not
// found" still pending, and a write that completed must not leave them
// owed. So a change whose row exists after it also adds the row's id to
// the primary-key filter and, per lookup, drops the mapping of its known
// value and adds the value to the lookup's filter, changed or not: both
// idempotent, and queued with the rest of the change's work (no extra
// round trip); the next GetBy of the value reloads its mapping. Lists keep
// the rule above in both modes: bumping the row's lists on every write (a
// price change included) would reload a list per write and defeat their
// caching; a list an earlier write left unbumped waits for that write's
// retry or repo/cdc.
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
	repair := after != nil && !ch.earlierApplied // earlier upkeep may be owed
	if after != nil {
		now = after.uks
		if after.id != "" {
			p.ids = append(p.ids, after.id)
			if s.filter && (repair || before == nil || before.id != after.id) {
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
		if w.ok && n.ok && w.key == n.key && !moved && !repair {
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
	if (before != nil && before.idLost) || (after != nil && after.idLost) {
		p.allIDs = true
		p.distrust = s.filter && after != nil && after.idLost
	}
	for i := range s.filters {
		if after != nil && i < len(after.uks) && after.uks[i].lost {
			if p.allMaps == nil {
				p.allMaps = make([]bool, len(s.filters))
			}
			p.allMaps[i] = true
		}
	}
	planLists(&p, ch, s.lists)
	return p
}

// planLists adds the list invalidations of ch, for n declared queries, to
// p. They do not depend on ch.earlierApplied (see planChange).
func planLists(p *plan, ch rowChange, n int) {
	before, after := ch.before, ch.after
	p.lists = make([][]string, n)
	p.allLists = make([]bool, n)
	moved := before != nil && after != nil && before.id != "" && after.id != "" && before.id != after.id
	for i := range n {
		var w, now listKey
		if before != nil && i < len(before.lists) {
			w = before.lists[i]
		}
		if after != nil && i < len(after.lists) {
			now = after.lists[i]
		}
		if (before != nil && !w.ok) || (after != nil && !now.ok) {
			p.allLists[i] = true
			continue
		}
		same := before != nil && after != nil && w.where == now.where && w.rest == now.rest && !moved
		if same && (!ch.reassert || now.gone) {
			continue // the same row, the same place in the same list
		}
		if before != nil {
			p.lists[i] = append(p.lists[i], w.where)
		}
		if after != nil && (before == nil || now.where != w.where) {
			p.lists[i] = append(p.lists[i], now.where)
		}
	}
}

// patchOf returns the patch of the list where of query i that ch makes,
// and the generation its writer read before the COMMIT; ok is false when
// the list is to be bumped: no generation read, or no line (lineOf).
func (ch rowChange) patchOf(i int, where string) (line, seen string, ok bool) {
	if i >= len(ch.seen) {
		return "", "", false
	}
	if seen, ok = ch.seen[i][where]; !ok {
		return "", "", false
	}
	line, ok = ch.lineOf(i, where, ch.idJSON)
	return line, seen, ok
}

// logPatchOf returns the patch of the list where of query i that ch, a
// change read from the log, makes; ok is false when the list is to be
// bumped: ch is not from the log, or has no line (lineOf).
func (ch rowChange) logPatchOf(i int, where string) (line string, ok bool) {
	if ch.log == nil || testswitch.LogPatchesOff.Load() {
		return "", false
	}
	idJSON := ""
	switch {
	case ch.after != nil:
		idJSON = ch.after.idJSON
	case ch.before != nil:
		idJSON = ch.before.idJSON
	}
	return ch.lineOf(i, where, idJSON)
}

// lineOf returns the patch line of the list where of query i that ch
// makes, the row's primary key being idJSON: the row at its order key
// there, or out of the list. ok is false when the list is to be bumped:
// no primary key, a change of primary key, or a row in the list without
// an order key.
func (ch rowChange) lineOf(i int, where, idJSON string) (line string, ok bool) {
	if idJSON == "" {
		return "", false
	}
	before, after := ch.before, ch.after
	if before != nil && after != nil && before.id != "" && before.id != after.id {
		return "", false
	}
	if after != nil && i < len(after.lists) && after.lists[i].where == where && !after.lists[i].gone {
		if after.lists[i].order == "" {
			return "", false
		}
		return patchLine(idJSON, after.lists[i].order), true
	}
	return patchLine(idJSON, ""), true // the row left the list, or is soft-deleted
}
