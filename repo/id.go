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
	switch t.Kind() {
	case reflect.Int:
		return intKey[ID, int], nil
	case reflect.Int8:
		return intKey[ID, int8], nil
	case reflect.Int16:
		return intKey[ID, int16], nil
	case reflect.Int32:
		return intKey[ID, int32], nil
	case reflect.Int64:
		return intKey[ID, int64], nil
	case reflect.Uint:
		return uintKey[ID, uint], nil
	case reflect.Uint8:
		return uintKey[ID, uint8], nil
	case reflect.Uint16:
		return uintKey[ID, uint16], nil
	case reflect.Uint32:
		return uintKey[ID, uint32], nil
	case reflect.Uint64:
		return uintKey[ID, uint64], nil
	case reflect.String:
		return stringKey[ID], nil
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

// The functions below reinterpret an ID as its underlying basic type B,
// which newIDCodec has checked it is (so the memory layout is the same by
// definition): that works for named types (type UserID int64) without
// boxing the id into an interface.

func intKey[ID comparable, B int | int8 | int16 | int32 | int64](id ID) (string, error) {
	return strconv.FormatInt(int64(*(*B)(unsafe.Pointer(&id))), 10), nil
}

func uintKey[ID comparable, B uint | uint8 | uint16 | uint32 | uint64](id ID) (string, error) {
	return strconv.FormatUint(uint64(*(*B)(unsafe.Pointer(&id))), 10), nil
}

func stringKey[ID comparable](id ID) (string, error) {
	s := *(*string)(unsafe.Pointer(&id))
	if s == "" {
		return "", fmt.Errorf("%w: empty id", ErrInvalidID)
	}
	return s, nil
}
