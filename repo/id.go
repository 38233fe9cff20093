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
			return string(b), checkText(string(b))
		}, nil
	}
	return nil, fmt.Errorf("%w: id type %v is not an integer, a string or an encoding.TextMarshaler", ErrInvalid, t)
}

// idDecoder is an idCodec's inverse for the kinds whose cache id can be
// parsed back (integers, strings): Get's loader is then made once, in New,
// instead of a closure over each id.
type idDecoder[ID comparable] func(string) (ID, error)

// newIDDecoder returns ID's decoder, or nil for TextMarshaler ids.
func newIDDecoder[ID comparable]() idDecoder[ID] {
	switch reflect.TypeFor[ID]().Kind() {
	case reflect.Int:
		return intID[ID, int]
	case reflect.Int8:
		return intID[ID, int8]
	case reflect.Int16:
		return intID[ID, int16]
	case reflect.Int32:
		return intID[ID, int32]
	case reflect.Int64:
		return intID[ID, int64]
	case reflect.Uint:
		return uintID[ID, uint]
	case reflect.Uint8:
		return uintID[ID, uint8]
	case reflect.Uint16:
		return uintID[ID, uint16]
	case reflect.Uint32:
		return uintID[ID, uint32]
	case reflect.Uint64:
		return uintID[ID, uint64]
	case reflect.String:
		return func(s string) (ID, error) {
			var id ID
			*(*string)(unsafe.Pointer(&id)) = s
			return id, nil
		}
	}
	return nil
}

func intID[ID comparable, B int | int8 | int16 | int32 | int64](s string) (ID, error) {
	var id ID
	n, err := strconv.ParseInt(s, 10, int(unsafe.Sizeof(B(0)))*8)
	*(*B)(unsafe.Pointer(&id)) = B(n)
	return id, err
}

func uintID[ID comparable, B uint | uint8 | uint16 | uint32 | uint64](s string) (ID, error) {
	var id ID
	n, err := strconv.ParseUint(s, 10, int(unsafe.Sizeof(B(0)))*8)
	*(*B)(unsafe.Pointer(&id)) = B(n)
	return id, err
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
	return s, checkText(s)
}
