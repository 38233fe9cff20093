package repo

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// This file holds list patches: how a write through the repository
// changes the cached pages of a list in place instead of making them
// reload (see "Cached queries" in the package doc).
//
// A list's generation (cacheaside.Generation) is a base and the patches
// written since the base began: "+<key> <id>" (the row id is in the list
// at order key key) or "-<id>" (it is not in the list). A
// keyset page is cached under the base, as a window of rows with their
// order keys, and a reader applies the patches to it in order. A patch
// says where its row is after the write, whatever it was before, so
// applying one to a page that has it already changes nothing; a writer
// appends its patch only if the generation is still the value it read
// before its COMMIT (cacheaside's ListGenerations.Patch), so patches
// land in commit order.

// windowSlack is how many rows a patchable page loads beyond the page
// and the row that says whether a next page exists: the removals a cached
// page absorbs before it has too few rows to serve.
const windowSlack = 16

var timeType = reflect.TypeFor[time.Time]()

// keyable reports whether f's values have an order key: integers,
// booleans and times compare in Go as PostgreSQL orders them; strings
// (collations) and floats (NaN) do not, so a list ordered by one is
// bumped on every write, never patched.
func keyable(f *schema.Field) bool {
	t := f.FieldType
	switch {
	case t == timeType:
		return true
	case t.Kind() == reflect.Bool:
		return true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// orderKey returns the order key of the order values vals (one per order
// column, of its type): 8 bytes per column, big-endian with the sign bit
// flipped, complemented for a descending column, in hex, so that keys
// compare as strings in the list's order. ok is false when a value has
// no exact key: a time finer than PostgreSQL's microsecond, which the
// database would round.
func (q *listQuery) orderKey(vals []any) (key string, ok bool) {
	if !q.patchable {
		return "", false
	}
	b := make([]byte, 0, 8*len(q.order))
	for i := range q.order {
		v := reflect.ValueOf(vals[i])
		var u uint64
		switch {
		case v.Type() == timeType:
			t := v.Interface().(time.Time)
			if t.Nanosecond()%1000 != 0 {
				return "", false
			}
			u = uint64(t.UnixMicro()) ^ 1<<63
		case v.CanInt():
			u = uint64(v.Int()) ^ 1<<63
		case v.CanUint():
			u = v.Uint()
		case v.Kind() == reflect.Bool && v.Bool():
			u = 1
		}
		if q.desc[i] {
			u = ^u
		}
		b = binary.BigEndian.AppendUint64(b, u)
	}
	return hex.EncodeToString(b), true
}

// orderValues returns the order values of row rv.
func (q *listQuery) orderValues(ctx context.Context, rv reflect.Value) []any {
	vals := make([]any, len(q.order))
	for i, f := range q.order {
		vals[i] = f.ReflectValueOf(ctx, rv).Interface()
	}
	return vals
}

// keyValues returns the order values an order key encodes (a valid key).
func (q *listQuery) keyValues(key string) ([]any, bool) {
	b, err := hex.DecodeString(key)
	if err != nil || len(b) != 8*len(q.order) {
		return nil, false
	}
	vals := make([]any, len(q.order))
	for i, f := range q.order {
		u := binary.BigEndian.Uint64(b[8*i:])
		if q.desc[i] {
			u = ^u
		}
		v := reflect.New(f.FieldType).Elem()
		switch {
		case f.FieldType == timeType:
			v.Set(reflect.ValueOf(time.UnixMicro(int64(u ^ 1<<63)).UTC()))
		case v.CanInt():
			v.SetInt(int64(u ^ 1<<63))
		case v.CanUint():
			v.SetUint(u)
		case v.Kind() == reflect.Bool:
			v.SetBool(u == 1)
		}
		vals[i] = v.Interface()
	}
	return vals, true
}

// patchLine is the patch of a write that left the row with primary key
// idJSON (JSON) at order key key of a list, or, with key "", out of it.
func patchLine(idJSON, key string) string {
	if key == "" {
		return "-" + idJSON
	}
	return "+" + key + " " + idJSON
}

// listRow is a row of a cached window: its id and order key.
type listRow[ID comparable] struct {
	id  ID
	key string
}

// patchWindow applies the patch lines to the cached window e of a keyset
// page whose rows come after the order key lower ("" for the first page)
// and returns the page of size rows and whether a next page exists. A
// line from the log (cacheaside.PatchFromLog) is applied only if the
// window's snapshot did not see its transaction. ok is false when a line
// does not parse, when a line from the log comes to a window read without
// a snapshot, or when removals left the window too few rows to tell the
// page: the caller loads it.
func patchWindow[ID comparable](e queryEntry[ID], lower string, size int, lines []string) (page []listRow[ID], more, ok bool) {
	if len(e.K) != len(e.IDs) {
		return nil, false, false
	}
	rows := make([]listRow[ID], len(e.IDs), len(e.IDs)+len(lines))
	for i, id := range e.IDs {
		rows[i] = listRow[ID]{id, e.K[i]}
	}
	bound := "" // the last key the window covers when rows follow it
	if e.More && len(rows) > 0 {
		bound = rows[len(rows)-1].key
	}
	var snap *snapshot // e.S parsed, once a log line needs it
	for _, line := range lines {
		if xid, patch, logged := cacheaside.Logged(line); logged {
			if snap == nil {
				s, ok := parseSnapshot(e.S)
				if !ok {
					return nil, false, false // read without its snapshot
				}
				snap = &s
			}
			if snap.sees(xid) && !testswitch.LogSnapshotOff.Load() {
				continue // the window holds the change already
			}
			line = patch
		}
		var id ID
		key, idJSON := "", line[min(1, len(line)):]
		if strings.HasPrefix(line, "+") {
			var found bool
			if key, idJSON, found = strings.Cut(idJSON, " "); !found || key == "" {
				return nil, false, false
			}
		} else if !strings.HasPrefix(line, "-") {
			return nil, false, false
		}
		if err := json.Unmarshal([]byte(idJSON), &id); err != nil {
			return nil, false, false
		}
		rows = slices.DeleteFunc(rows, func(r listRow[ID]) bool { return r.id == id })
		if key == "" || key <= lower || (bound != "" && key > bound) {
			continue // out of the list, or of the window
		}
		i, _ := slices.BinarySearchFunc(rows, key, func(r listRow[ID], k string) int { return strings.Compare(r.key, k) })
		rows = slices.Insert(rows, i, listRow[ID]{id, key})
	}
	switch {
	case len(rows) > size:
		return rows[:size], true, true
	case e.More && len(rows) < size:
		return nil, false, false // the rows that would fill the page are past the window
	default:
		return rows, e.More, true
	}
}

// listReads are the lists of the patchable queries that a write's row
// leaves (before's) and joins (row's; nil for a delete), whose
// generations the write reads before its statement so that its upkeep
// can patch them; at[i] is the query of the ListRead i. None without
// patchable queries, or when the row keeps its place in every list.
func (r *Repository[T, ID]) listReads(ctx context.Context, before *rowKeys, row *T) (reads []cacheaside.ListRead, at []int) {
	for i, q := range r.c.lists.all() {
		if !q.patchable {
			continue
		}
		var wheres []string
		if before != nil && i < len(before.lists) && before.lists[i].ok {
			wheres = append(wheres, before.lists[i].where)
		}
		if row != nil {
			now := q.keyOf(ctx, reflect.ValueOf(row).Elem())
			if len(wheres) == 1 && before.lists[i].rest == now.rest && before.lists[i].where == now.where && !r.c.reassert() {
				continue // the row keeps its place: no list changes
			}
			if !slices.Contains(wheres, now.where) {
				wheres = append(wheres, now.where)
			}
		}
		if len(wheres) > 0 {
			reads = append(reads, cacheaside.ListRead{Lists: q.gens.lg, IDs: wheres})
			at = append(at, i)
		}
	}
	return reads, at
}

// idJSON returns id as JSON for a patch line; "" (no patch) when id does
// not marshal.
func idJSON(id any) string {
	b, err := json.Marshal(id)
	if err != nil {
		return ""
	}
	return string(b)
}
