package repo

import (
	"context"
	"reflect"
	"slices"
	"time"

	"github.com/asidekit/asidekit/internal/rowchange"
	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// This file decodes a whole row from a change of the database's log, for
// Options.LogStores: repo/cdc then stores it (cacheaside.StoreFromLog)
// instead of invalidating it. The row must be exactly what a load would
// read, so only the column types whose text output pgx decodes to the
// value a load (pgx's binary format, through database/sql) yields are
// taken (logPair), into fields of the Go kinds that hold them without
// conversion (logStorable).

// logPair reports whether a column of PostgreSQL type oid (pg_type.oid)
// decodes into a field of Go type t, from the log's text, as a load reads
// it: bool into a bool; int2, int4, int8 into an integer; float8 into a
// float64; text, varchar, bpchar and uuid into a string; bytea into a
// []byte; date, timestamp and timestamptz into a time.Time or
// gorm.DeletedAt (a pointer to any of these too). Not float4 (a load
// widens a float32, text parses as float64), numeric (a load rounds
// through its binary form), json and the rest.
func logPair(oid uint32, t reflect.Type) bool {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch oid {
	case 16:
		return t.Kind() == reflect.Bool
	case 20, 21, 23:
		return t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64
	case 701:
		return t.Kind() == reflect.Float64
	case 25, 1042, 1043, 2950:
		return t.Kind() == reflect.String
	case 17:
		return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
	case 1082, 1114, 1184:
		return t == timeType || t == deletedAtType
	}
	return false
}

// logOIDs are one type of each group logPair pairs with a field.
var logOIDs = []uint32{16, 20, 701, 25, 17, 1184}

// timestamptzOID is timestamptz's type: a load yields it in time.Local,
// the log's text in its session's offset.
const timestamptzOID = 1184

// deletedAtType is gorm.DeletedAt's type (timeType is time.Time's).
var deletedAtType = reflect.TypeFor[gorm.DeletedAt]()

// logStorable reports whether every column a load reads (readColumns) is
// a field that some column type decodes into as a load sets it (logPair),
// of an unnamed Go type (a named one may have methods of its own: a
// Scanner), time.Time or gorm.DeletedAt, or a pointer to one of these,
// without a serializer. A repository whose model is not stores nothing
// from the log, and reads no position after its loads.
func logStorable(sch *schema.Schema) bool {
	for _, name := range sch.DBNames {
		f := sch.FieldsByDBName[name]
		if !f.Readable {
			continue
		}
		t := f.FieldType
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if f.Serializer != nil || t.PkgPath() != "" && t != timeType && t != deletedAtType ||
			!slices.ContainsFunc(logOIDs, func(oid uint32) bool { return logPair(oid, t) }) {
			return false
		}
	}
	return true
}

// rowOfLog returns the row that row, a change's new side, carries, as a
// load of it would read it, and false when the log left a column out (an
// unchanged TOAST value, a generated column), carries one of a type that
// logPair does not pair with its field, or a value does not decode, and
// for a soft-deleted row (a load finds none), which deleted reports.
func (c *core[T, ID]) rowOfLog(ctx context.Context, row rowchange.Row) (v T, ok, deleted bool) {
	rv := reflect.ValueOf(&v).Elem()
	for _, name := range c.sch.DBNames {
		f := c.sch.FieldsByDBName[name]
		if !f.Readable {
			continue
		}
		col, ok := row.Lookup(name)
		if !ok || !logPair(col.Type, f.FieldType) {
			return v, false, false
		}
		if col.Null {
			continue // the zero value, as a load sets it
		}
		fv := f.ReflectValueOf(ctx, rv)
		if err := logTypes.scan(col.Type, col.Text, fv.Addr().Interface()); err != nil {
			return v, false, false
		}
		if col.Type == timestamptzOID {
			inLocal(fv)
		}
		if d, ok := fv.Interface().(gorm.DeletedAt); ok && d.Valid {
			return v, false, true // soft-deleted: a load finds no row
		}
	}
	return v, true, false
}

// inLocal moves the time fv holds (a time.Time, gorm.DeletedAt or a
// pointer to one) to time.Local, where a load's timestamptz is.
func inLocal(fv reflect.Value) {
	if fv.Kind() == reflect.Pointer {
		if fv.IsNil() {
			return
		}
		fv = fv.Elem()
	}
	switch p := fv.Addr().Interface().(type) {
	case *time.Time:
		*p = p.In(time.Local)
	case *gorm.DeletedAt:
		p.Time = p.Time.In(time.Local)
	}
}
