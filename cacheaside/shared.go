package cacheaside

import (
	"reflect"
	"time"
)

// fetched is a GET's reply, shared by the Gets of one commit group batch
// (see commitGroup). When T is copy-safe the batch's call decodes the
// payload once and every caller takes its own copy of v; otherwise each
// caller decodes b itself, so that no two callers share a slice, map or
// pointer of T.
type fetched[T any] struct {
	b       []byte
	v       T    // b's payload, when decoded
	decoded bool // v holds b's payload (a value entry of a copy-safe T)
	bad     bool // b's payload does not decode
}

// decode returns payload decoded by the Cache's codec, and whether it
// decoded. (A function of its own: only its v escapes to the codec, not
// the caller's larger values.)
func (e *Entity[T]) decode(payload []byte) (v T, ok bool) {
	if e.c.codec.Unmarshal(payload, &v) != nil {
		return v, false
	}
	return v, true
}

var timeType = reflect.TypeFor[time.Time]()

// copySafe reports whether a copy of a value of type t shares nothing
// that a holder could change: no pointer, slice, map, interface, channel
// or func, in t or in its fields and elements. A time.Time is copy-safe
// (its *Location is never changed).
func copySafe(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Array:
		return copySafe(t.Elem())
	case reflect.Struct:
		if t == timeType {
			return true
		}
		for i := range t.NumField() {
			if !copySafe(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}
