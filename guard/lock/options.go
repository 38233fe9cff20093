package lock

import (
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/keys"
)

// Options configure a Locker. A nil *Options is the same as a zero one.
type Options struct {
	// Namespace starts every key and the unlock channel. Default "ak".
	// It may not contain characters that need escaping in a key.
	Namespace string

	// MinBackoff is the first retry delay of a waiting Obtain, doubled
	// after each wake-up by the timer up to MaxBackoff, and jittered.
	// Default 10ms.
	MinBackoff time.Duration

	// MaxBackoff caps the retry delay. Default 500ms. While the shared
	// subscription is live, a waiter sleeps for the holder's remaining
	// ttl plus one backoff, since an early release would be announced; a
	// lost announcement thus costs at most that much.
	MaxBackoff time.Duration
}

// ObtainOptions tune one Obtain call. A nil *ObtainOptions is the same as
// a zero one.
type ObtainOptions struct {
	// WaitTimeout bounds how long Obtain waits for a held lock, on top of
	// the context. Zero means the lock's ttl: long enough for a holder
	// that crashed to expire once. A negative value means no bound but
	// the context.
	WaitTimeout time.Duration
}

// RedlockOptions configure a Redlock. A nil *RedlockOptions is the same as
// a zero one.
type RedlockOptions struct {
	// Namespace starts every key, on every node. Default "ak".
	Namespace string

	// MinBackoff is the first delay between two rounds of a waiting
	// Obtain, doubled after each round up to MaxBackoff, and jittered so
	// that contenders do not retry in step. Default 10ms.
	MinBackoff time.Duration

	// MaxBackoff caps the delay between rounds. Default 500ms.
	MaxBackoff time.Duration

	// DriftFactor is the clock drift allowed for, as a fraction of the
	// ttl: a lock is valid for ttl - elapsed - ttl·DriftFactor - 2ms
	// after the round that obtained it started. Default 0.01.
	DriftFactor float64

	// NodeTimeout bounds each node's reply in a round, so that a node
	// that hangs costs little of the validity time. Default ttl/10, at
	// least 50ms. Give the nodes' clients MaxRetries -1 and DialerRetries
	// 1, so that a node that is down fails at once instead of retrying
	// through the timeout.
	NodeTimeout time.Duration
}

const (
	defaultMinBackoff  = 10 * time.Millisecond
	defaultMaxBackoff  = 500 * time.Millisecond
	defaultDriftFactor = 0.01
	minNodeTimeout     = 50 * time.Millisecond
)

// init returns a copy of o with defaults filled in and the namespace
// checked.
func (o *Options) init() (Options, error) {
	c, err := keys.CopyOptions(o, func(c *Options) *string { return &c.Namespace }, ErrInvalid)
	if err != nil {
		return c, err
	}
	c.MinBackoff, c.MaxBackoff = backoffDefaults(c.MinBackoff, c.MaxBackoff)
	return c, nil
}

func (o *RedlockOptions) init() (RedlockOptions, error) {
	c, err := keys.CopyOptions(o, func(c *RedlockOptions) *string { return &c.Namespace }, ErrInvalid)
	if err != nil {
		return c, err
	}
	c.MinBackoff, c.MaxBackoff = backoffDefaults(c.MinBackoff, c.MaxBackoff)
	if c.DriftFactor <= 0 {
		c.DriftFactor = defaultDriftFactor
	}
	if !(c.DriftFactor < 1) { // NaN too
		return c, fmt.Errorf("%w: DriftFactor %v is not below 1", ErrInvalid, c.DriftFactor)
	}
	return c, nil
}

func backoffDefaults(lo, hi time.Duration) (time.Duration, time.Duration) {
	if lo <= 0 {
		lo = defaultMinBackoff
	}
	if hi <= 0 {
		hi = defaultMaxBackoff
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// waitBound is how long Obtain may wait for a lock of the given ttl; 0
// means no bound.
func (o *ObtainOptions) waitBound(ttl time.Duration) time.Duration {
	if o == nil || o.WaitTimeout == 0 {
		return ttl
	}
	if o.WaitTimeout < 0 {
		return 0
	}
	return o.WaitTimeout
}

// checkTTL rejects a ttl that Redis cannot take in milliseconds.
func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: ttl %v is below 1ms", ErrInvalid, ttl)
	}
	return nil
}
