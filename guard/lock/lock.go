package lock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Lock is a held lock, from a Locker (one Redis) or a Redlock (a quorum of
// independent Redis nodes): the methods mean the same for both. A Lock is
// safe for concurrent use.
type Lock struct {
	name  string
	token string
	fence int64
	h     holder
	ttl   atomic.Int64 // the ttl last set, in nanoseconds

	mu    sync.Mutex
	watch *watchdog // guarded by mu; the running AutoRefresh, if any
}

// holder is what a Lock needs from the backend that granted it.
type holder interface {
	// release deletes the lock if token holds it; false if it did not.
	release(ctx context.Context, token string) (bool, error)
	// refresh sets ttl if token holds the lock; false if it did not.
	refresh(ctx context.Context, token string, ttl time.Duration) (bool, error)
	// pttl is the remaining ttl, or ok false if token does not hold it.
	pttl(ctx context.Context, token string) (d time.Duration, ok bool, err error)
}

func newLock(name, token string, fence int64, ttl time.Duration, h holder) *Lock {
	l := new(Lock)
	l.init(name, token, fence, ttl, h)
	return l
}

// init sets up a zero Lock in place.
func (l *Lock) init(name, token string, fence int64, ttl time.Duration, h holder) {
	l.name, l.token, l.fence, l.h = name, token, fence, h
	l.ttl.Store(int64(ttl))
}

// Key returns the lock's name, as given to Obtain.
func (l *Lock) Key() string { return l.name }

// Token returns the random token of this acquisition: 128 bits, unique to
// it, and the value stored in the lock key.
func (l *Lock) Token() string { return l.token }

// Fence returns the fencing number of this acquisition. Each acquisition of
// the same lock name gets a larger number than the one before, so a
// database or service can reject writes that carry a fence lower than one
// it has already seen: those come from a holder whose lock has expired.
func (l *Lock) Fence() int64 { return l.fence }

// Release deletes the lock if this acquisition still holds it and
// announces the release to waiters. It stops the AutoRefresh watchdog
// first. It returns ErrLockNotHeld, and deletes nothing, if the lock has
// expired or belongs to another holder, or when it was already released.
func (l *Lock) Release(ctx context.Context) error {
	l.stopWatch()
	ok, err := l.h.release(ctx, l.token)
	if err != nil {
		return fmt.Errorf("lock: release %q: %w", l.name, err)
	}
	if !ok {
		return fmt.Errorf("%w: release %q", ErrLockNotHeld, l.name)
	}
	return nil
}

// Refresh sets the lock's remaining ttl to ttl, if this acquisition still
// holds it; else it returns ErrLockNotHeld and changes nothing. A ttl below
// 1ms (or, for a Redlock, not above its drift allowance) is ErrInvalid and
// changes nothing either.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	ok, err := l.h.refresh(ctx, l.token, ttl)
	if err != nil {
		return fmt.Errorf("lock: refresh %q: %w", l.name, err)
	}
	if !ok {
		return fmt.Errorf("%w: refresh %q", ErrLockNotHeld, l.name)
	}
	l.ttl.Store(int64(ttl))
	return nil
}

// TTL returns how long the lock remains held if it is not refreshed, or
// ErrLockNotHeld if this acquisition no longer holds it. A lock key with no
// expiry (set by hand) reports -1.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	d, ok, err := l.h.pttl(ctx, l.token)
	if err != nil {
		return 0, fmt.Errorf("lock: ttl %q: %w", l.name, err)
	}
	if !ok {
		return 0, fmt.Errorf("%w: ttl %q", ErrLockNotHeld, l.name)
	}
	return d, nil
}
