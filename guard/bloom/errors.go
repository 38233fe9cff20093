package bloom

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalid is returned (wrapped, with the reason) by New for a nil
	// client, nil Options, or a bad name, namespace or sizing: a capacity
	// ≤ 0, a false-positive rate outside (0, 1), or a shard that would
	// pass Redis's 512 MB string limit.
	ErrInvalid = errors.New("bloom: invalid argument")

	// ErrEmptyKey is returned when an element is the empty string, which is
	// almost always a missing id rather than a value meant to be stored.
	ErrEmptyKey = errors.New("bloom: empty key")

	// ErrLayoutMismatch is returned when the filter in Redis was written by
	// a Filter with other Options (capacity, rate or shards): its bits would
	// mean something else, so nothing is read or written.
	ErrLayoutMismatch = errors.New("bloom: filter in Redis has another layout")

	// ErrRebuildSuperseded is returned by Rebuild (and by the add function it
	// hands to a Source) when a newer Rebuild of the same filter took over.
	// The filter stays correct: the newer rebuild finishes the job.
	ErrRebuildSuperseded = errors.New("bloom: rebuild superseded by a newer one")

	// ErrPanic is returned (wrapping the panic value) by Rebuild when a
	// user callback, the Source, panicked; the rebuild is aborted and the
	// current generation stays in place. Every asidekit package names a
	// panicking callback ErrPanic (cacheaside, seqgen).
	ErrPanic = errors.New("bloom: rebuild source panicked")
)

// Error replies of the Lua scripts, mapped at the boundary.
const (
	replyLayout     = "AKBLOOM_LAYOUT"
	replySuperseded = "AKBLOOM_SUPERSEDED"
)

// mapScriptError turns a script's error reply into a sentinel; other errors
// pass through.
func (f *Filter) mapScriptError(err error) error {
	if err == nil {
		return nil
	}
	// Redis puts "ERR " before an error reply that has no code of its own;
	// the replies above have one, but accept both.
	msg := strings.TrimPrefix(err.Error(), "ERR ")
	switch {
	case strings.HasPrefix(msg, replyLayout):
		return fmt.Errorf("%w: filter %q in Redis is %q, this Filter is %q",
			ErrLayoutMismatch, f.name, strings.TrimSpace(strings.TrimPrefix(msg, replyLayout)), f.layout.fingerprint)
	case strings.HasPrefix(msg, replySuperseded):
		return ErrRebuildSuperseded // callers name the filter
	}
	return fmt.Errorf("bloom: filter %q: %w", f.name, err)
}
