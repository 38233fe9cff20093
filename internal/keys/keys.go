// Package keys builds Redis keys for every asidekit package: a namespace,
// then parts joined by colons, with each caller-supplied part escaped so
// that no id can break out of its key or its hash tag.
package keys

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultNamespace is the namespace used when an option leaves it empty.
const DefaultNamespace = "ak"

// MaxPart is the longest part, in bytes before escaping, that Escape accepts.
const MaxPart = 1024

// ErrInvalid is returned (wrapped) for an id or name that cannot be part of
// a key: empty, longer than MaxPart, or not valid in a namespace.
var ErrInvalid = errors.New("invalid key part")

// Escape returns s with every byte that has a meaning in asidekit's keys or
// in Redis hash tags percent-encoded: '%', ':', '{', '}', '*', '?', '[', ']',
// '\\', spaces and control bytes. Other bytes, UTF-8 included, pass through,
// so ordinary ids stay readable. Different inputs give different outputs.
func Escape(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalid)
	}
	if len(s) > MaxPart {
		return "", fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalid, len(s), MaxPart)
	}
	clean := true
	for i := 0; i < len(s); i++ {
		if special[s[i]] {
			clean = false
			break
		}
	}
	if clean {
		return s, nil
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if special[c] {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// special holds the bytes Escape writes as %XX: '%' itself, the
// separators and glob characters of key patterns, space, DEL and the
// control bytes.
var special = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	for _, c := range "%:{}*?[]\\ \x7f" {
		t[c] = true
	}
	return t
}()

// Namespace checks ns (the empty string means DefaultNamespace) and returns
// it. A namespace may not contain characters that Escape would change.
func Namespace(ns string) (string, error) {
	if ns == "" {
		return DefaultNamespace, nil
	}
	esc, err := Escape(ns)
	if err != nil {
		return "", fmt.Errorf("namespace: %w", err)
	}
	if esc != ns {
		return "", fmt.Errorf("%w: namespace %q may not contain %% : { } * ? [ ] \\, spaces or control bytes", ErrInvalid, ns)
	}
	return ns, nil
}

// CopyOptions is how a constructor takes its options: it returns a copy of
// *opts (the zero T when opts is nil, so a nil pointer means the defaults,
// and the caller's struct is never changed) whose namespace field, the one
// namespace points to, is checked and defaulted as by Namespace. A bad
// namespace is an error wrapping both invalid (the package's sentinel) and
// ErrInvalid.
func CopyOptions[T any](opts *T, namespace func(*T) *string, invalid error) (T, error) {
	var c T
	if opts != nil {
		c = *opts
	}
	ns := namespace(&c)
	checked, err := Namespace(*ns)
	if err != nil {
		return c, fmt.Errorf("%w: %w", invalid, err)
	}
	*ns = checked
	return c, nil
}
