package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/internal/keys"
)

// Entity is a typed handle on one kind of cached value (e.g. "user"),
// with its Policy. It is safe for concurrent use. Values are returned by
// copy, but a T holding pointers, slices or maps shares them among the
// callers of one load: treat results as read-only.
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
	reads      commitGroup[[]byte] // GETs
	getEntry   func(context.Context, string) ([]byte, error)
	direct     commitGroup[T] // fail-open loads
	refreshing sync.Map       // id -> struct{}: refreshes running in this process

	local *localTier[T] // near cache: nil when Policy.Local is nil
}

// NewEntity returns the entity name of c with Policy p (zero fields take
// their documented defaults). name is escaped into every key; it may not
// be empty.
func NewEntity[T any](c *Cache, name string, p Policy) (*Entity[T], error) {
	if c == nil {
		return nil, fmt.Errorf("%w: nil Cache", ErrInvalid)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	esc, err := keys.Escape(name)
	if err != nil {
		return nil, fmt.Errorf("cacheaside: entity name: %w: %w", ErrInvalidID, err)
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
		clock:  p.Grace > 0 || p.Strategy.servesStale() || p.Strategy.earlyRefreshes(),
		lockPX: ms(p.LockTTL),
		graceM: p.Grace.Milliseconds(),
	}
	e.getEntry = func(ctx context.Context, key string) ([]byte, error) { return c.client.Get(ctx, key).Bytes() }
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
func (e *Entity[T]) Stats() Stats { return e.ctr.snapshot() }

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

// stale is a value past its logical expiry, kept to be served within Grace
// if the loader fails.
type stale[T any] struct {
	v      T
	expiry int64 // Unix ms
}

// Get returns id's value: from Redis on a hit (one round trip), otherwise
// from load, as the Policy's strategy directs, storing the result. load
// returns ErrNotFound (or an error wrapping it) when id does not exist; Get
// then returns ErrNotFound, and the absence is cached for NullTTL.
//
// A value Get returns is never older than a write (source of truth, then
// Invalidate or Set) that completed before Get began, except for stale
// values within Grace that the Policy allows (AsyncRefresh, or a failing
// loader).
//
// When Redis fails (or the breaker is open) Get calls load directly,
// within MaxConcurrentLoads, and stores nothing; concurrent Gets of id in
// this process share such loads by group commit (a Get never takes the
// result of a load that began before it). Every wait honours ctx.
func (e *Entity[T]) Get(ctx context.Context, id string, load Loader[T]) (T, error) {
	esc, err := escapeID(id)
	if err != nil {
		var zero T
		return zero, err
	}
	if load == nil {
		var zero T
		return zero, errNilLoader
	}
	if e.c.rec.bypass() {
		// Redis failed, and the writes made meanwhile may not all be
		// applied yet (see RecoveryGate): load, uncached.
		e.ctr.inc(EventBypass)
		return e.failOpen(ctx, id, load, nil)
	}
	if v, ok, err := e.local.get(esc); ok { // near cache: a local answer, no key built
		return v, err
	}
	key := e.prefix + esc + "}"
	for attempt := 0; ; attempt++ {
		// A caller that joined a shared load too late to be covered by its
		// validation starts over; the last attempt loads on its own.
		v, retry, err := e.get(ctx, key, id, load, attempt < maxJoinAttempts)
		if !retry {
			return v, err
		}
	}
}

// maxJoinAttempts bounds how often a Get joins shared loads whose results
// it may not use before it loads on its own.
const maxJoinAttempts = 3

// get is one attempt of Get; share says whether it may join (or start)
// a load shared with other callers.
func (e *Entity[T]) get(ctx context.Context, key, id string, load Loader[T], share bool) (v T, retry bool, err error) {
	if !e.c.br.Allow() || e.c.retry.holds(key) {
		// Redis is down, or may still hold what an invalidation of key
		// that failed must remove: load, uncached.
		e.ctr.inc(EventBypass)
		v, err = e.failOpen(ctx, id, load, nil)
		return v, false, err
	}
	tk := e.local.ticket(key) // near cache: before the read that may fill it
	b, err := e.read(ctx, key)
	if err = e.redisResult(ctx, err); err != nil {
		if errors.Is(err, errFailOpen) {
			v, err = e.failOpen(ctx, id, load, nil)
		}
		return v, false, err
	}
	vw := e.classify(b, e.now())
	switch vw.state {
	case stateFresh:
		e.ctr.inc(EventHit)
		e.local.put(tk, key, vw.v, vw.expiry) // near cache
		return vw.v, false, nil
	case stateDue:
		e.ctr.inc(EventHit)
		e.local.put(tk, key, vw.v, vw.expiry) // near cache
		return e.earlyRefresh(ctx, key, id, load, vw.v, vw.hdr), false, nil
	case stateStale:
		e.ctr.inc(EventStaleServed)
		e.refreshAsync(ctx, key, id, load, vw.hdr)
		return vw.v, false, nil
	case stateNull:
		e.ctr.inc(EventNullHit)
		e.local.putNull(tk, key, vw.expiry) // near cache
		return v, false, ErrNotFound
	case stateCorrupt:
		e.corrupt(ctx, key)
	}
	e.ctr.inc(EventMiss)
	v, retry, err = e.miss(ctx, key, id, load, vw.stale(), share)
	if errors.Is(err, errFailOpen) {
		v, err = e.failOpen(ctx, id, load, vw.stale())
	}
	return v, retry, err
}

// read GETs key's entry in a GET shared with the concurrent Gets of key
// in this process by group commit (see commitGroup): a lone reader sends
// its GET at once; while one is in flight, readers queue for the next.
func (e *Entity[T]) read(ctx context.Context, key string) ([]byte, error) {
	return e.reads.do(ctx, key, e.getEntry)
}

// corrupt deletes an entry that is not ours (or is damaged) and counts it.
func (e *Entity[T]) corrupt(ctx context.Context, key string) {
	e.ctr.inc(EventDecodeError)
	e.note(ctx, e.c.client.Del(ctx, key).Err())
}

// miss handles a cache miss: the filter, then the strategy. retry reports
// that the caller joined a shared load whose result it may not use; an
// error matching errFailOpen, that Redis failed before the load began.
func (e *Entity[T]) miss(ctx context.Context, key, id string, load Loader[T], st *stale[T], share bool) (v T, retry bool, err error) {
	var zero T
	if e.p.Filter != nil {
		ok, err := e.p.Filter.MightContain(ctx, id)
		switch {
		case err != nil && ctx.Err() != nil:
			return zero, false, ctx.Err()
		case err != nil:
			e.ctr.inc(EventCacheError)
		case !ok:
			e.ctr.inc(EventFiltered)
			return zero, false, ErrNotFound
		}
	}
	rebuild := e.loadAndStore
	if e.p.Strategy.leases() {
		rebuild = e.leased
	}
	if !e.p.Strategy.shares() || !share {
		v, _, err = rebuild(ctx, key, id, load, st, noMark)
		return v, false, err
	}
	return e.flight.do(ctx, id, func(ctx context.Context, mark func()) (T, outcome, error) {
		return rebuild(ctx, key, id, load, st, mark)
	})
}

// serveStale returns st's value if it is still within Grace.
func (e *Entity[T]) serveStale(st *stale[T]) (T, bool) {
	if st == nil || e.graceM <= 0 || time.Now().UnixMilli() >= st.expiry+e.graceM {
		var zero T
		return zero, false
	}
	e.ctr.inc(EventStaleServed)
	return st.v, true
}

// ms converts d to whole milliseconds, at least 1.
func ms(d time.Duration) int64 {
	return max(d.Milliseconds(), 1)
}
