package cacheaside

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// LocalPolicy configures an entity's near cache: an in-process tier in
// front of Redis that answers a hit with no round trip. It is kept fresh by
// Redis itself (see Options.LocalInvalidation): every change of a cached
// key, whoever made it (a write through asidekit, a plain SET or DEL from
// another program, an expiry, an eviction, a FLUSHALL), drops the key from
// every process's tier. While that stream of invalidations is not known to
// be complete (before it is confirmed, after its connection dropped, while
// it reconnects) the tier is empty and is not filled, so it never serves a
// value it cannot vouch for.
//
// A local entry lives at most TTL (NullTTL for a "not found"), and never
// past the logical expiry of the Redis entry it was read from. It is filled
// by reads that hit Redis (Get and GetMany) and dropped, in the writing
// process, by Set and Invalidate before they return.
type LocalPolicy struct {
	// MaxEntries caps the entries kept in this process for the entity;
	// past it the least valuable are evicted (W-TinyLFU). Default 10000.
	MaxEntries int

	// TTL caps the life of a local value. Default 1 minute.
	TTL time.Duration

	// NullTTL is how long a "not found" answer is kept locally (capped by
	// its Redis entry's life, itself Policy.NullTTL). Default 0: absences
	// are not kept locally.
	NullTTL time.Duration
}

// Defaults of LocalPolicy fields.
const (
	DefaultLocalMaxEntries = 10000
	DefaultLocalTTL        = time.Minute
)

func (p LocalPolicy) withDefaults() (LocalPolicy, error) {
	if p.MaxEntries < 0 || p.TTL < 0 || p.NullTTL < 0 {
		return p, fmt.Errorf("%w: negative Local.MaxEntries, Local.TTL or Local.NullTTL", ErrInvalid)
	}
	if p.MaxEntries == 0 {
		p.MaxEntries = DefaultLocalMaxEntries
	}
	if p.TTL == 0 {
		p.TTL = DefaultLocalTTL
	}
	return p, nil
}

// localStripes is the number of locks (and invalidation generations) a
// tier spreads its keys over.
const localStripes = 256

// localTier is one entity's near cache. A nil *localTier is a disabled one:
// every method is then a no-op, so the read and write paths call them
// unconditionally.
//
// Filling races with invalidation: a reader takes a ticket (the feed's
// epoch and its key's stripe generation) before its Redis read, and stores
// what it read only if neither changed meanwhile, under the stripe's lock;
// an invalidation bumps the generation and deletes under the same lock,
// and a loss of the feed bumps the epoch and empties the tier. So a value
// read before a change is either refused or deleted by it.
type localTier[T any] struct {
	p     LocalPolicy
	feed  *near
	ctr   *counters
	store *otter.Cache[string, localEntry[T]] // by escaped id: see id
	seed  maphash.Seed
	skip  int      // length of the entity's key prefix, "<ns>:{<name>:"
	hot   *hotness // the automatic near cache's admission (Options.HotKeys); nil: a Policy.Local tier, which keeps every key

	scanning atomic.Bool // a demotion pass runs (hot tiers)

	stripes [localStripes]struct {
		mu  sync.Mutex    // serializes fills and drops of the stripe's keys
		gen atomic.Uint64 // bumped (under mu) by every drop of one of them
	}
}

// localEntry is a local value (or absence) and when it stops being served.
type localEntry[T any] struct {
	v        T
	null     bool
	size     int32 // the Redis entry's length: the weight of a hot tier's entry
	deadline int64 // Unix nanoseconds
}

// ticket is what a reader saw before its Redis read; see localTier.
type ticket struct {
	epoch  uint64
	gen    uint64
	stripe uint32
}

// newLocalTier returns the tier of an entity named esc (escaped): the
// Policy.Local near cache p, or when p is nil the automatic near cache of
// hot keys (Options.HotKeys), or nil for neither.
func newLocalTier[T any](c *Cache, esc string, p *LocalPolicy, ctr *counters) (*localTier[T], error) {
	hp := c.hotKeys
	if p == nil && hp == nil {
		return nil, nil
	}
	var lp LocalPolicy
	if p != nil {
		lp = *p // defaults filled in by Policy.withDefaults
	}
	l := &localTier[T]{p: lp, ctr: ctr, seed: maphash.MakeSeed(), skip: len(c.ns) + len(":{") + len(esc) + len(":")}
	o := &otter.Options[string, localEntry[T]]{
		MaximumSize: lp.MaxEntries,
		ExpiryCalculator: otter.ExpiryWritingFunc(func(e otter.Entry[string, localEntry[T]]) time.Duration {
			return time.Duration(e.Value.deadline - time.Now().UnixNano())
		}),
		OnDeletion: func(e otter.DeletionEvent[string, localEntry[T]]) {
			if e.Cause == otter.CauseOverflow {
				ctr.inc(EventLocalEviction)
			}
		},
	}
	if p == nil { // the automatic near cache
		l.hot = newHotness(*hp)
		l.hot.scan = l.demoteCooled
		l.p = LocalPolicy{TTL: hp.TTL}
		o.MaximumSize = 0
		o.MaximumWeight = uint64(hp.Budget - l.hot.sk.bytes())
		o.Weigher = func(id string, e localEntry[T]) uint32 {
			return uint32(len(id)) + uint32(e.size) + hotEntryOverhead
		}
		o.OnDeletion = func(e otter.DeletionEvent[string, localEntry[T]]) {
			switch e.Cause {
			case otter.CauseOverflow:
				ctr.inc(EventLocalEviction)
				ctr.inc(EventHotDemotion)
			case otter.CauseExpiration:
				ctr.inc(EventHotDemotion)
			}
		}
	}
	var err error
	l.store, err = otter.New(o)
	if err != nil {
		return nil, fmt.Errorf("cacheaside: local tier: %w", err)
	}
	if l.feed, err = c.nearFeed(); err != nil {
		return nil, err
	}
	l.feed.register(esc, l)
	return l, nil
}

// id is what the tier keeps the entry key of its entity under: the
// escaped id, a substring of key. So a hit needs no key built (the read
// gate looks up Get's escaped id before it makes the Redis key, which
// allocated on every local hit).
func (l *localTier[T]) id(key string) string {
	if len(key) <= l.skip {
		return key
	}
	return key[l.skip : len(key)-1]
}

// get serves the entry of escaped id esc from the tier: ok reports a
// local answer, a value (in *v) or, for a local "not found", err =
// ErrNotFound. (The value goes to *v, not to a result: a near cache hit
// then copies it once less on its way to the caller.)
func (l *localTier[T]) get(esc string, v *T) (ok bool, err error) {
	if l == nil {
		return false, nil
	}
	e, found := l.store.GetIfPresent(esc)
	if !found || time.Now().UnixNano() >= e.deadline {
		l.ctr.inc(EventLocalMiss)
		return false, nil
	}
	l.ctr.inc(EventLocalHit)
	if l.hot != nil { // still read: it stays hot
		l.hot.hit(maphash.String(l.seed, esc))
	}
	if e.null {
		return true, ErrNotFound
	}
	*v = e.v
	return true, nil
}

// ticket is taken before the Redis read of key whose result may fill the
// tier.
func (l *localTier[T]) ticket(key string) ticket {
	if l == nil {
		return ticket{}
	}
	h := maphash.String(l.seed, l.id(key))
	if l.hot != nil {
		l.hot.miss(h)
	}
	s := uint32(h % localStripes)
	return ticket{epoch: l.feed.epoch.Load(), gen: l.stripes[s].gen.Load(), stripe: s}
}

// put keeps vw's value, read from Redis under t, until the earlier of
// now + TTL and the Redis entry's logical expiry. A hot tier keeps it
// only if its key is hot.
func (l *localTier[T]) put(t ticket, key string, vw *view[T]) {
	l.fill(t, key, localEntry[T]{v: vw.v, size: int32(min(vw.size, 1<<30))}, l.p.TTL, vw.expiry)
}

// putNull keeps a "not found" read from Redis under t (if NullTTL > 0).
func (l *localTier[T]) putNull(t ticket, key string, expiry int64) {
	if l.p.NullTTL > 0 {
		l.fill(t, key, localEntry[T]{null: true}, l.p.NullTTL, expiry)
	}
}

func (l *localTier[T]) fill(t ticket, key string, e localEntry[T], ttl time.Duration, expiry int64) {
	if t.epoch%2 == 0 { // taken while the feed was down
		return
	}
	now := time.Now().UnixNano()
	e.deadline = min(now+int64(ttl), expiry*int64(time.Millisecond))
	if e.deadline <= now {
		return
	}
	id := l.id(key)
	if l.hot != nil && !l.hot.hot(maphash.String(l.seed, id)) {
		return
	}
	s := &l.stripes[t.stripe]
	s.mu.Lock()
	if l.feed.epoch.Load() == t.epoch && s.gen.Load() == t.gen {
		if _, added := l.store.Set(id, e); added && l.hot != nil {
			l.ctr.inc(EventHotPromotion)
		}
	}
	s.mu.Unlock()
}

// drop removes key (invalidated by Redis or written by this process) and
// refuses the fills of reads that began before.
func (l *localTier[T]) drop(key string) {
	id := l.id(key)
	s := &l.stripes[maphash.String(l.seed, id)%localStripes]
	s.mu.Lock()
	s.gen.Add(1)
	l.store.Invalidate(id)
	s.mu.Unlock()
}

// invalidated is the feed's report of a change of key.
func (l *localTier[T]) invalidated(key string) {
	l.ctr.inc(EventLocalInvalidation)
	if l.hot != nil && testswitch.HotKeyInvalidationOff.Load() {
		return
	}
	l.drop(key)
}

// flush empties the tier. The feed bumped its epoch before, so no fill
// ticketed earlier can land once every stripe was passed.
func (l *localTier[T]) flush() {
	for i := range l.stripes {
		l.stripes[i].mu.Lock()
		//lint:ignore SA2001 an empty critical section: waits for the fills in progress
		l.stripes[i].mu.Unlock()
	}
	l.store.InvalidateAll()
	l.ctr.inc(EventLocalFlush)
}

func (l *localTier[T]) stop() { l.store.StopAllGoroutines() }

// wrote is called by Set and Invalidate once Redis has the write (or
// failed it): this process's copies of keys are dropped before the write
// returns, and with LocalBroadcast the change is announced to the others.
func (l *localTier[T]) wrote(ctx context.Context, keys ...string) {
	if l == nil {
		return
	}
	for _, k := range keys {
		l.drop(k)
	}
	if err := l.feed.announce(ctx, keys); err != nil {
		l.ctr.inc(EventCacheError)
	}
}

// wrotePending is wrote for Invalidate's batch.
func (l *localTier[T]) wrotePending(ctx context.Context, todo []pending) {
	if l == nil {
		return
	}
	keys := make([]string, len(todo))
	for i, p := range todo {
		keys[i] = p.key
	}
	l.wrote(ctx, keys...)
}

// hotEntryOverhead is what a hot tier's entry is reckoned to weigh beyond
// its id and encoded value: otter's node (with its expiry links) and the
// entry's own fields.
const hotEntryOverhead = 128

// demoteCooled starts, in the background, a pass that demotes the
// promoted keys whose estimate fell (the sketch was just halved). One
// pass at a time; a halving during a pass starts none.
func (l *localTier[T]) demoteCooled() {
	if !l.scanning.CompareAndSwap(false, true) {
		return
	}
	if !l.feed.c.goBackground(func() {
		defer l.scanning.Store(false)
		var cold []string
		for id := range l.store.Keys() {
			if l.hot.cooled(maphash.String(l.seed, id)) {
				cold = append(cold, id)
			}
		}
		for _, id := range cold {
			s := &l.stripes[maphash.String(l.seed, id)%localStripes]
			s.mu.Lock()
			if _, ok := l.store.Invalidate(id); ok {
				l.ctr.inc(EventHotDemotion)
			}
			s.mu.Unlock()
		}
	}) {
		l.scanning.Store(false)
	}
}

// localBytes is the estimated weight of a hot tier's entries (0 for a
// Policy.Local tier, which counts entries, not bytes). otter weighs an
// entry when it drains its write buffer, not when Set returns: the
// buffer is drained first, or a tier serving hits could report 0.
func (l *localTier[T]) localBytes() uint64 {
	if l == nil || l.hot == nil {
		return 0
	}
	l.store.CleanUp()
	return l.store.WeightedSize()
}
