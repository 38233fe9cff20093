package cacheaside

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned when the id exists nowhere: the loader said
	// so (now or within NullTTL), or the Policy's Filter ruled it out.
	// Loaders return it (or an error wrapping it) to signal absence.
	ErrNotFound = errors.New("cacheaside: not found")

	// ErrOverloaded is returned at once, without calling the loader, when
	// the entity already runs MaxConcurrentLoads loads in this process.
	ErrOverloaded = errors.New("cacheaside: too many concurrent loads")

	// ErrWaitTimeout is returned when a caller waited WaitTimeout for
	// another process to rebuild a value and no value appeared (and no
	// stale value within Grace was available).
	ErrWaitTimeout = errors.New("cacheaside: timed out waiting for the value to be rebuilt")

	// ErrPanic matches (errors.Is) the error every waiter of a load gets
	// when the loader panicked. The error is a *PanicError. Every asidekit
	// package names a panicking callback ErrPanic (guard/bloom, seqgen).
	ErrPanic = errors.New("cacheaside: loader panicked")

	// ErrInvalidationPending is returned by Invalidate (and Set) when Redis
	// could not be reached: the invalidation is queued and retried in the
	// background until it succeeds or the Cache is closed; until then a
	// stale value may be served for at most its TTL.
	ErrInvalidationPending = errors.New("cacheaside: invalidation failed, retrying in the background")

	// ErrInvalid is returned (wrapped, with the reason) for an argument
	// that cannot be used: by New for a nil client or Options it cannot use
	// (a bad namespace, an unknown LocalInvalidation); by NewEntity for a
	// nil Cache or a Policy it cannot use (a negative TTL, LockTTL,
	// WaitTimeout, RefreshTimeout or Beta, a Jitter above 1, an unknown
	// Strategy, a negative field of Local); and, as ErrInvalidID, for an id
	// or entity name that cannot be used in a key.
	ErrInvalid = errors.New("cacheaside: invalid argument")

	// ErrInvalidID wraps the reason an id or entity name cannot be used in
	// a key: empty, or longer than 1024 bytes. It wraps ErrInvalid, so an
	// error that matches it matches ErrInvalid too.
	ErrInvalidID = fmt.Errorf("%w: id", ErrInvalid)

	// ErrValueTooLarge is returned by Set (and counted, not returned, for
	// loaded values, which are then served uncached) when an encoded entry
	// exceeds Options.MaxValueSize.
	ErrValueTooLarge = errors.New("cacheaside: value too large")

	// ErrClosed is returned by NewEntity on a closed Cache.
	ErrClosed = errors.New("cacheaside: cache closed")
)

// PanicError is the error a recovered loader panic becomes.
type PanicError struct {
	// Value is what the loader passed to panic.
	Value any
	// Stack is the loader goroutine's stack at the panic.
	Stack []byte
}

func (p *PanicError) Error() string {
	return fmt.Sprintf("cacheaside: loader panicked: %v", p.Value)
}

// Is reports whether target is ErrPanic.
func (p *PanicError) Is(target error) bool { return target == ErrPanic }

// Unwrap returns the panic value when it is an error.
func (p *PanicError) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}
