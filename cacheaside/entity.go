package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/internal/keys"
)

// Entity is a typed handle on one kind of cached value (e.g. "user"),
// with its Policy. It is safe for concurrent use. Values are returned by
// copy, but a T holding pointers, slices or maps shares them among the
// callers of one load: treat results as read-only. Concurrent Gets of a
// key in one process share their GET (group commit); for a T without
// pointers, slices, maps or interfaces (numbers, strings, time.Time, and
// arrays and structs of those) its payload is decoded once for all of
// them, otherwise each decodes its own.
type Entity[T any] struct {
	c      *Cache
	name   string
	p      Policy
	prefix string // ns + ":{" + escaped name + ":"
	ctr    *counters

	clock  bool  // the hit path needs the time (Grace, AsyncRefresh, EarlyRefresh)
	lockPX int64 // LockTTL in ms
	verPX  int64 // version key TTL in ms
	graceM int64 // Grace in ms

	active     atomic.Int64 // loader calls running now
	flight     flight[T]
	reads      commitGroup[fetched[T]] // GETs
	getEntry   func(context.Context, string) (fetched[T], error)
	copySafe   bool           // T shares nothing when copied: a shared GET decodes once (see fetched)
	direct     commitGroup[T] // fail-open loads
	refreshing sync.Map       // id -> struct{}: refreshes claimed in this process (see claimRefresh)

	local *localTier[T] // near cache: Policy.Local's, or the automatic one of Options.HotKeys; nil for neither
}

// NewEntity returns the entity name of c with Policy p (zero fields take
// their documented defaults). name is escaped into every key; it may not
// be empty.
func NewEntity[T any](c *Cache, name string, p Policy) (*Entity[T], error) {
	esc, err := escapedName(c, "entity name", name)
	if err != nil {
		return nil, err
	}
	p, err = p.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Entity[T]{
		c:      c,
		name:   name,
		p:      p,
		prefix: c.ns + ":{" + esc + ":",
		ctr:    &counters{name: name, observer: c.observer},
		clock:  p.Grace > 0 || p.Strategy.servesStale() || p.Strategy == EarlyRefresh,
		lockPX: ms(p.LockTTL),
		graceM: p.Grace.Milliseconds(),
	}
	e.getEntry = e.fetch
	e.copySafe = copySafe(reflect.TypeFor[T]())
	longest := max(time.Duration(float64(p.TTL)*(1+p.Jitter))+p.Grace, time.Duration(float64(p.NullTTL)*(1+p.Jitter)))
	e.verPX = ms(longest + p.LockTTL + time.Minute)
	if e.local, err = newLocalTier[T](c, esc, p.Local, e.ctr); err != nil { // near cache
		return nil, err
	}
	return e, nil
}

// Name returns the entity's name.
func (e *Entity[T]) Name() string { return e.name }

// Policy returns the entity's policy with defaults filled in.
func (e *Entity[T]) Policy() Policy { return e.p }

// Stats returns a snapshot of the entity's counters.
func (e *Entity[T]) Stats() Stats {
	s := e.ctr.snapshot()
	s.LocalBytes = e.local.localBytes()
	return s
}

// Key returns the Redis key of id's entry, e.g. "ak:{user:42}".
func (e *Entity[T]) Key(id string) (string, error) { return e.key(id) }

func (e *Entity[T]) key(id string) (string, error) {
	esc, err := escapeID(id)
	if err != nil {
		return "", err
	}
	return e.prefix + esc + "}", nil
}

// escapeID is id as it appears in keys.
func escapeID(id string) (string, error) {
	esc, err := keys.Escape(id)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidID, err)
	}
	return esc, nil
}

var errNilLoader = errors.New("cacheaside: nil loader")

// ms converts d to whole milliseconds, at least 1.
func ms(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}

// escapedName checks that c is an open Cache and returns name escaped for
// its keys; what names the name in errors ("entity name").
func escapedName(c *Cache, what, name string) (string, error) {
	if c == nil {
		return "", fmt.Errorf("%w: nil Cache", ErrInvalid)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return "", ErrClosed
	}
	esc, err := keys.Escape(name)
	if err != nil {
		return "", fmt.Errorf("cacheaside: %s: %w: %w", what, ErrInvalidID, err)
	}
	return esc, nil
}
