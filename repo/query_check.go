package repo

import (
	"context"
	"reflect"

	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// A list read returns the rows its page names, each read through the
// cache, so a row is never older than a write that completed; but the
// page may be. With repo/cdc the lists lag the table by the
// Invalidator's lag: a row that a plain-SQL change moved out of a list
// stays in it until the Invalidator appends its line, and a repository
// write of the row completed meanwhile (it read the row where the
// plain-SQL change had put it, so it patched from there) would leave it
// listed there. The row itself knows better: List leaves out a row
// whose own filter values put it in another list (holds). The other half,
// a row moved into a list by such a change, is the write's to fix: a
// write of a table the Invalidator feeds re-asserts its row's place even
// when it leaves the row where it read it (rowChange.reassert).

// reassert reports whether a write re-asserts its row's place in the
// lists it stays in: when a repo/cdc Invalidator of this process has the
// table registered.
func (c *core[T, ID]) reassert() bool {
	return c.fedByLog.Load() && !testswitch.ListReassertOff.Load()
}

// exactFilter reports whether values of the filter column f compare in Go
// as PostgreSQL compares them: integers and bools (pointers to them too).
func exactFilter(f *schema.Field) bool {
	t := f.FieldType
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

// holds reports whether the list of the filter values vals (one per Where
// column, of its field's type: Query.filter's) may show row, a *T:
// always, unless the query's filter columns are exact (checkable) and the
// row's values put it in another list. It allocates nothing: it runs for
// every row of every page read.
func (q *listQuery) holds(ctx context.Context, vals []any, row any) bool {
	if !q.checkable || testswitch.ListRowCheckOff.Load() {
		return true
	}
	rv := reflect.ValueOf(row).Elem()
	for i, f := range q.where {
		if !sameExact(f.ReflectValueOf(ctx, rv), reflect.ValueOf(vals[i])) {
			return false
		}
	}
	return true
}

// sameExact reports whether a and b, integers or bools of one field's
// type (or pointers to them), are equal; a nil pointer equals nothing (a
// list of NULL is not cached).
func sameExact(a, b reflect.Value) bool {
	a, okA := deref(a)
	b, okB := deref(b)
	if !okA || !okB {
		return false
	}
	switch {
	case a.CanInt() && b.CanInt():
		return a.Int() == b.Int()
	case a.CanUint() && b.CanUint():
		return a.Uint() == b.Uint()
	case a.Kind() == reflect.Bool && b.Kind() == reflect.Bool:
		return a.Bool() == b.Bool()
	}
	return false
}
