package repo

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"unsafe"
)

// idCodec turns an ID into the string the cache and the filter use. It is
// chosen once, in New, from ID's kind, so that the hot path does not box
// the id into an interface or call fmt.
type idCodec[ID comparable] func(ID) (string, error)

// newIDCodec returns the codec for ID: integers in base 10, strings as they
// are, other types through encoding.TextMarshaler (uuid.UUID and the like).
func newIDCodec[ID comparable]() (idCodec[ID], error) {
	t := reflect.TypeFor[ID]()
	// The unsafe conversions below reinterpret an ID as its underlying
	// basic type, which has the same memory layout by definition; they
	// work for named types (type UserID int64) without boxing.
	switch t.Kind() {
	case reflect.Int:
		return func(id ID) (string, error) { return strconv.FormatInt(int64(*(*int)(unsafe.Pointer(&id))), 10), nil }, nil
	case reflect.Int8:
		return func(id ID) (string, error) { return strconv.FormatInt(int64(*(*int8)(unsafe.Pointer(&id))), 10), nil }, nil
	case reflect.Int16:
		return func(id ID) (string, error) { return strconv.FormatInt(int64(*(*int16)(unsafe.Pointer(&id))), 10), nil }, nil
	case reflect.Int32:
		return func(id ID) (string, error) { return strconv.FormatInt(int64(*(*int32)(unsafe.Pointer(&id))), 10), nil }, nil
	case reflect.Int64:
		return func(id ID) (string, error) { return strconv.FormatInt(*(*int64)(unsafe.Pointer(&id)), 10), nil }, nil
	case reflect.Uint:
		return func(id ID) (string, error) { return strconv.FormatUint(uint64(*(*uint)(unsafe.Pointer(&id))), 10), nil }, nil
	case reflect.Uint8:
		return func(id ID) (string, error) {
			return strconv.FormatUint(uint64(*(*uint8)(unsafe.Pointer(&id))), 10), nil
		}, nil
	case reflect.Uint16:
		return func(id ID) (string, error) {
			return strconv.FormatUint(uint64(*(*uint16)(unsafe.Pointer(&id))), 10), nil
		}, nil
	case reflect.Uint32:
		return func(id ID) (string, error) {
			return strconv.FormatUint(uint64(*(*uint32)(unsafe.Pointer(&id))), 10), nil
		}, nil
	case reflect.Uint64:
		return func(id ID) (string, error) { return strconv.FormatUint(*(*uint64)(unsafe.Pointer(&id)), 10), nil }, nil
	case reflect.String:
		return func(id ID) (string, error) {
			s := *(*string)(unsafe.Pointer(&id))
			if s == "" {
				return "", fmt.Errorf("%w: empty id", ErrInvalidID)
			}
			return s, nil
		}, nil
	}
	if t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
		return func(id ID) (string, error) {
			b, err := any(id).(encoding.TextMarshaler).MarshalText()
			if err != nil {
				return "", fmt.Errorf("%w: %w", ErrInvalidID, err)
			}
			if len(b) == 0 {
				return "", fmt.Errorf("%w: id %v marshals to empty text", ErrInvalidID, id)
			}
			return string(b), nil
		}, nil
	}
	return nil, fmt.Errorf("%w: id type %v is not an integer, a string or an encoding.TextMarshaler", ErrInvalidOptions, t)
}
