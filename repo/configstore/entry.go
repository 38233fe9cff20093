package configstore

import (
	"errors"
	"strconv"
	"strings"
)

// builtField is the hash field that marks a hash as built. Keys are never
// empty, so it cannot collide with one.
const builtField = ""

// rebuildField holds, while the hash is not built, the token of the rebuild
// (or Reconcile) that means to build it; see lock.lua. Keys never contain
// a NUL byte, so it cannot collide with one.
const rebuildField = "\x00rebuild"

// special reports whether a hash field is one of the package's markers
// rather than a key.
func special(field string) bool { return field == builtField || field == rebuildField }

// entry is one key's state: a value, or a deletion, at a version.
type entry struct {
	value   string
	version int64
	deleted bool
}

// encode gives the hash's form of e: "<version>:<value>" or, for a
// deletion, "<version>".
func (e entry) encode() string {
	v := strconv.FormatInt(e.version, 10)
	if e.deleted {
		return v
	}
	return v + ":" + e.value
}

// decode parses a hash entry; ok is false for anything encode cannot have
// written.
func decode(s string) (e entry, ok bool) {
	num, value, hasValue := strings.Cut(s, ":")
	if num == "" || num[0] < '0' || num[0] > '9' {
		return entry{}, false
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v < 0 {
		return entry{}, false
	}
	return entry{value: value, version: v, deleted: !hasValue}, true
}

// Change is one key's new state, as Watch delivers it.
type Change struct {
	Key     string
	Value   string // "" when Deleted
	Version int64  // the key's version in the table; 0 for a removed foreign entry
	Deleted bool
}

func (e entry) change(key string) Change {
	return Change{Key: key, Value: e.value, Version: e.version, Deleted: e.deleted}
}

var errBadMessage = errors.New("configstore: malformed change message")

// parseMessage decodes a message of the Lua scripts: per change,
// "<len>:<field><len>:<entry>", where an empty entry means the field was
// removed with no version of its own.
func parseMessage(p string) ([]Change, error) {
	var out []Change
	for p != "" {
		field, rest, err := lengthPrefixed(p)
		if err != nil {
			return nil, err
		}
		raw, rest, err := lengthPrefixed(rest)
		if err != nil {
			return nil, err
		}
		p = rest
		if raw == "" {
			out = append(out, Change{Key: field, Deleted: true})
			continue
		}
		e, ok := decode(raw)
		if !ok {
			return nil, errBadMessage
		}
		out = append(out, e.change(field))
	}
	return out, nil
}

func lengthPrefixed(p string) (s, rest string, err error) {
	num, rest, ok := strings.Cut(p, ":")
	if !ok {
		return "", "", errBadMessage
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || n > len(rest) {
		return "", "", errBadMessage
	}
	return rest[:n], rest[n:], nil
}
