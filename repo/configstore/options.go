package configstore

import (
	"time"

	"github.com/asidekit/asidekit/internal/keys"
)

// Options configures a Store. The zero value, and a nil *Options, give the
// defaults documented on each field.
type Options struct {
	// Namespace is the first part of every Redis key. Default "ak".
	Namespace string

	// Scope names one set of settings: the namespace column of the table
	// and the hash tag of the Redis keys. Stores with the same Scope share
	// their settings. At most 255 bytes of UTF-8 without NUL.
	// Default "default".
	Scope string

	// LockTTL bounds how long one rebuild of the hash may hold the rebuild
	// lock; a process that dies while holding it delays the others by at
	// most this long. Default 5s.
	LockTTL time.Duration

	// WaitTimeout bounds how long a reader waits for another process to
	// rebuild the hash before it fails with ErrTimeout. Keep it above
	// LockTTL so that a waiter can take over from a holder that died. It
	// also bounds a table read shared by readers while Redis fails (each
	// reader still stops waiting when its own context ends).
	// Default 2 × LockTTL.
	WaitTimeout time.Duration

	// NoDBFallback turns off the database fallback of reads: with it set,
	// a Get or All that Redis fails returns the Redis error instead of
	// reading the table. Set it when the database must not take the read
	// load of a Redis outage. Default false: reads fall back to the table.
	NoDBFallback bool

	// MaxValueSize is the largest value, in bytes, that Set accepts.
	// Default 1 MiB.
	MaxValueSize int

	// WatchBuffer is the capacity of the channel Watch returns.
	// Default 64.
	WatchBuffer int

	// OnReconcile, if set, is called by Run after each reconciliation with
	// its report and error. It runs on Run's goroutine: a slow callback
	// delays the next reconciliation. Default: none.
	OnReconcile func(Report, error)
}

const (
	defaultScope        = "default"
	defaultLockTTL      = 5 * time.Second
	defaultMaxValueSize = 1 << 20
	defaultWatchBuffer  = 64
	maxScope            = 255
	maxKey              = 1024

	// mirrorTimeout bounds the copy of a committed write into the hash. The
	// copy does not stop when the caller's context ends: the write is
	// already in the database and an uncopied write is drift.
	mirrorTimeout = 5 * time.Second
)

// init returns a copy of o (nil allowed) with zero fields filled in, or an
// error wrapping ErrInvalid for a bad namespace.
func (o *Options) init() (Options, error) {
	c, err := keys.CopyOptions(o, func(c *Options) *string { return &c.Namespace }, ErrInvalid)
	if err != nil {
		return c, err
	}
	if c.Scope == "" {
		c.Scope = defaultScope
	}
	if c.LockTTL <= 0 {
		c.LockTTL = defaultLockTTL
	}
	if c.WaitTimeout <= 0 {
		c.WaitTimeout = 2 * c.LockTTL
	}
	if c.MaxValueSize <= 0 {
		c.MaxValueSize = defaultMaxValueSize
	}
	if c.WatchBuffer <= 0 {
		c.WatchBuffer = defaultWatchBuffer
	}
	return c, nil
}
