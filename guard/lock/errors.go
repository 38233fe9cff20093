package lock

import (
	"errors"
	"fmt"
)

var (
	// ErrNotObtained is returned when the lock is held by someone else:
	// at once by TryObtain, after the wait by Obtain. When Obtain gives up
	// because its context ended, the error matches both ErrNotObtained and
	// the context's error.
	ErrNotObtained = errors.New("lock: not obtained")

	// ErrLockNotHeld is returned by Release, Refresh and TTL when the lock
	// has expired or belongs to another holder. Nothing is changed then.
	ErrLockNotHeld = errors.New("lock: not held")

	// ErrNoQuorum is returned by a Redlock when fewer than N/2+1 nodes
	// granted the lock within its validity time, typically because nodes
	// are down. It wraps ErrNotObtained; the error that carries it names
	// the nodes' failures.
	ErrNoQuorum = fmt.Errorf("%w: redlock quorum not reached", ErrNotObtained)

	// ErrInvalid is returned (wrapped, with the reason) for an argument
	// that cannot be used: by New and NewRedlock for a nil client, an
	// empty list of nodes, or Options they cannot use (a bad namespace, a
	// DriftFactor not below 1); by a call for an empty lock name or one
	// longer than 1024 bytes, a ttl below 1ms (or, for a Redlock, one that
	// the clock drift allowance would use up). Nothing is sent to Redis
	// then.
	ErrInvalid = errors.New("lock: invalid argument")

	// ErrClosed is returned by a Locker's Obtain, TryObtain and Listen
	// after Close, including to callers that were waiting when it was
	// called. Locks already held can still be refreshed and released.
	ErrClosed = errors.New("lock: locker closed")
)
