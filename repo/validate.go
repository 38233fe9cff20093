package repo

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm/clause"
)

// This file holds the checks of input that PostgreSQL or the cache would
// refuse later, made before any SQL runs, so that they surface as
// ErrInvalidID and not as a database error.

// checkText refuses a text id or value PostgreSQL cannot store in a text
// column: one with a NUL byte or that is not valid UTF-8.
func checkText(s string) error {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return fmt.Errorf("%w: %q holds a NUL byte", ErrInvalidID, s)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidID, s)
	}
	return nil
}

// checkUniques refuses a row whose value of a unique key is too long to be
// a cache id: it could be stored but never read by GetBy. With columns
// set, only the keys whose columns are all among them are checked (the
// others are not written).
func (c *core[T, ID]) checkUniques(ctx context.Context, row *T, columns ...string) error {
	rv := reflect.ValueOf(row).Elem()
	for _, l := range c.lookups {
		if columns != nil && !l.within(columns) {
			continue
		}
		key, ok, err := l.key(ctx, rv)
		if err != nil {
			return fmt.Errorf("%w (%s)", err, l.name)
		}
		if ok && !l.cacheable(key) {
			return fmt.Errorf("%w: %s: a value of %d bytes is too long to be cached", ErrInvalidID, l.name, len(key))
		}
	}
	return nil
}

// checkSet is checkUniques for Modify's values by column name: a plain
// value of a one-column unique key must be cacheable (an SQL expression is
// not checked).
func (c *core[T, ID]) checkSet(set map[string]any) error {
	for _, l := range c.lookups {
		if len(l.fields) != 1 {
			continue
		}
		v, ok := set[l.fields[0].DBName]
		if !ok || !isPlain(v) {
			continue
		}
		key, ok, err := valueKey(v)
		if err != nil {
			return fmt.Errorf("%w (%s)", err, l.name)
		}
		if ok && !l.cacheable(key) {
			return fmt.Errorf("%w: %s: a value of %d bytes is too long to be cached", ErrInvalidID, l.name, len(key))
		}
	}
	return nil
}

// isPlain reports whether v is a value and not an SQL expression.
func isPlain(v any) bool {
	_, expr := v.(clause.Expression)
	return !expr
}

// within reports whether every column of l is one of columns (column or
// field names).
func (l *lookup[ID]) within(columns []string) bool {
	for _, f := range l.fields {
		if !slices.Contains(columns, f.DBName) && !slices.Contains(columns, f.Name) {
			return false
		}
	}
	return true
}

// checkType refuses a GetBy value whose type cannot be the column's: a
// number or a bool for a text column, a bool for a number column, a number
// for a bool column. Other values (the field's own type, text that the
// driver parses, a type of the user's) are left to the driver.
func (l *lookup[ID]) checkType(v any) error {
	want, got := l.fields[0].FieldType, reflect.TypeOf(v)
	for want.Kind() == reflect.Pointer {
		want = want.Elem()
	}
	for got.Kind() == reflect.Pointer {
		got = got.Elem()
	}
	w, g := kindClass(want.Kind()), kindClass(got.Kind())
	if w == "number" && g == "text" { // a number in text, as from a URL
		if _, err := strconv.ParseFloat(reflect.Indirect(reflect.ValueOf(v)).String(), 64); err == nil {
			return nil
		}
	} else if w == "" || g == "" || w == g {
		return nil
	}
	return fmt.Errorf("%w: %s: a %T value for a column of type %v", ErrInvalidID, l.name, v, want)
}

// kindClass groups the basic kinds that one SQL type accepts; "" for the
// others.
func kindClass(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "bool"
	}
	return ""
}
