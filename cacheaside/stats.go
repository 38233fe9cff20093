package cacheaside

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Event is one kind of thing an entity counts; an Observer receives them.
type Event int

const (
	// EventHit: a fresh value served from Redis.
	EventHit Event = iota
	// EventMiss: no usable entry in Redis (absent, expired, corrupt).
	EventMiss
	// EventNullHit: a cached "not found" served from Redis.
	EventNullHit
	// EventFiltered: the Filter ruled the id out; no load.
	EventFiltered
	// EventLoad: a loader call finished (successfully, or with
	// ErrNotFound); the duration is its latency.
	EventLoad
	// EventLoadError: a loader call failed (or panicked); the duration is
	// its latency.
	EventLoadError
	// EventStaleServed: a value past its logical expiry was served (within
	// Grace).
	EventStaleServed
	// EventRefresh: a value was recomputed ahead of its expiry
	// (AsyncRefresh in the background, EarlyRefresh by a reader).
	EventRefresh
	// EventLockWait: a caller waited for another caller's rebuild (GetMany
	// counts one per id it waited for).
	EventLockWait
	// EventLockTimeout: such a wait ended after WaitTimeout (GetMany: one
	// per id still missing then).
	EventLockTimeout
	// EventRejectedSet: a store after a load was refused because the id
	// was invalidated (or Set) after the load began, or skipped in the
	// settle window (Options.SettleWindow).
	EventRejectedSet
	// EventDecodeError: a corrupt or foreign entry was found and deleted.
	EventDecodeError
	// EventCacheError: a Redis (or Filter) call failed.
	EventCacheError
	// EventOverloaded: a caller got ErrOverloaded.
	EventOverloaded
	// EventBypass: Redis was skipped because the breaker is open (or a
	// recovery gate or a pending invalidation holds the read, or a miss
	// loaded uncached in the settle window).
	EventBypass
	// EventInvalidationDeferred: an invalidation failed and was queued for
	// background retry.
	EventInvalidationDeferred
	// EventInvalidationRetry: a background retry of queued invalidations
	// ran (successful or not).
	EventInvalidationRetry
	// EventLocalHit: a value (or "not found") served from the near cache.
	EventLocalHit
	// EventLocalMiss: the near cache had no live entry; the read went on
	// to Redis.
	EventLocalMiss
	// EventLocalEviction: a near cache entry was evicted to stay within
	// Local.MaxEntries.
	EventLocalEviction
	// EventLocalInvalidation: Redis (or a broadcast) reported a change of
	// one of the entity's entries; the near cache dropped it.
	EventLocalInvalidation
	// EventLocalFlush: the near cache was emptied because its invalidation
	// subscription was lost (or Redis was flushed).
	EventLocalFlush
	// EventLeaseLost: a caller found that a rebuild lease it had taken was
	// no longer its own: it lapsed (the caller was held up past LockTTL
	// between renewals: CPU starvation, a GC pause) or was deleted. Counted
	// once per lease, by the last check before the load (the id is then
	// not loaded: a miss waits for it as for an id leased by another, a
	// refresh leaves it)
	// or when the load's result is stored or given up. Every load of an id
	// beyond the first is explained by one of these; a lease found lost
	// before the load, or that lapsed with nobody taking it, costs none.
	EventLeaseLost
	// EventHotPromotion: a hot key's value entered the automatic near
	// cache (Options.HotKeys): read from Redis while the key's estimated
	// reads reached HotKeyPolicy.MinReads. A key promoted again after an
	// invalidation or a demotion counts again.
	EventHotPromotion
	// EventHotDemotion: a promoted value left the automatic near cache for
	// another reason than a change of its entry (an invalidation, a write,
	// a flush): its key cooled, its local life ended, or the budget needed
	// its room (then it also counts as EventLocalEviction).
	EventHotDemotion

	numEvents
)

var eventNames = [numEvents]string{
	"hit", "miss", "null_hit", "filtered", "load", "load_error",
	"stale_served", "refresh", "lock_wait", "lock_timeout", "rejected_set",
	"decode_error", "cache_error", "overloaded", "bypass",
	"invalidation_deferred", "invalidation_retry",
	"local_hit", "local_miss", "local_eviction", "local_invalidation", "local_flush",
	"lease_lost", "hot_promotion", "hot_demotion",
}

// String returns a snake_case name such as "null_hit", fit for a metric
// label.
func (e Event) String() string {
	if e >= 0 && e < numEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("Event(%d)", int(e))
}

// Observer receives every event of every entity of a Cache, synchronously,
// on the caller's goroutine: implementations must be fast, safe for
// concurrent use and must not block. d is the loader's latency for
// EventLoad and EventLoadError, and 0 otherwise. A Prometheus exporter
// maps events to counters and d to a histogram.
type Observer interface {
	OnEvent(entity string, ev Event, d time.Duration)
}

// Stats is a snapshot of an entity's counters since it was created.
type Stats struct {
	Hits, Misses, NullHits, Filtered uint64
	// Loads counts finished loader calls that returned a value or
	// ErrNotFound; LoadErrors those that failed or panicked.
	Loads, LoadErrors uint64
	// LoadTime is the total latency of all loader calls (Loads and
	// LoadErrors); see MeanLoadTime.
	LoadTime                  time.Duration
	StaleServed, Refreshes    uint64
	LockWaits, LockTimeouts   uint64
	RejectedSets              uint64
	DecodeErrors, CacheErrors uint64
	Overloaded, Bypassed      uint64
	// InvalidationsDeferred counts invalidations queued after a failure;
	// InvalidationRetries the background attempts to apply them.
	InvalidationsDeferred, InvalidationRetries uint64
	// The near cache (Policy.Local): hits and misses, evictions,
	// invalidations received and flushes.
	LocalHits, LocalMisses, LocalEvictions uint64
	LocalInvalidations, LocalFlushes       uint64
	// The automatic near cache (Options.HotKeys): promotions and
	// demotions of hot keys, and LocalBytes, the estimated weight of the
	// values it holds now (a gauge; 0 for a Policy.Local near cache).
	HotPromotions, HotDemotions uint64
	LocalBytes                  uint64
	// LeasesLost counts rebuild leases found lapsed (or deleted) while
	// their holder still meant to load or store (EventLeaseLost).
	LeasesLost uint64
	// ReplicaAckShortfalls counts invalidations (first tries and
	// retries, of Invalidate and Set) that the master applied but fewer
	// than Options.ReplicaAcks replicas confirmed within
	// Options.ReplicaAckTimeout; each was queued for retry (and is also
	// counted in InvalidationsDeferred when first queued). Always 0 with
	// ReplicaAcks off.
	ReplicaAckShortfalls uint64
	// Settled counts the misses loaded uncached, the loads' stores
	// skipped (or refused by a changed epoch marker) and the refreshes
	// and write-through stores skipped because the Cache was in its
	// settle window (see Options.SettleWindow).
	Settled uint64
}

// LocalHitRatio is the share of the reads that asked a near cache (a
// Policy.Local or an automatic one) that it answered: LocalHits over
// LocalHits + LocalMisses; 0 before any.
func (s Stats) LocalHitRatio() float64 {
	n := s.LocalHits + s.LocalMisses
	if n == 0 {
		return 0
	}
	return float64(s.LocalHits) / float64(n)
}

// MeanLoadTime is LoadTime divided by the number of loader calls.
func (s Stats) MeanLoadTime() time.Duration {
	n := s.Loads + s.LoadErrors
	if n == 0 {
		return 0
	}
	return s.LoadTime / time.Duration(n)
}

// counters are an entity's atomic counters, shared with the Cache's
// background work (invalidation retries).
type counters struct {
	name     string
	observer Observer
	n        [numEvents]atomic.Uint64
	loadNS   atomic.Int64
	// shortfalls counts replica acknowledgement shortfalls; not an Event
	// (yet), so that Observers see no new event kind.
	shortfalls atomic.Uint64
	// settled counts what the settle window changed (Stats.Settled); not
	// an Event either.
	settled atomic.Uint64
}

func (c *counters) inc(ev Event) {
	c.n[ev].Add(1)
	if c.observer != nil {
		c.observer.OnEvent(c.name, ev, 0)
	}
}

func (c *counters) load(ev Event, d time.Duration) {
	c.n[ev].Add(1)
	c.loadNS.Add(int64(d))
	if c.observer != nil {
		c.observer.OnEvent(c.name, ev, d)
	}
}

func (c *counters) snapshot() Stats {
	g := func(ev Event) uint64 { return c.n[ev].Load() }
	return Stats{
		Hits: g(EventHit), Misses: g(EventMiss), NullHits: g(EventNullHit), Filtered: g(EventFiltered),
		Loads: g(EventLoad), LoadErrors: g(EventLoadError), LoadTime: time.Duration(c.loadNS.Load()),
		StaleServed: g(EventStaleServed), Refreshes: g(EventRefresh),
		LockWaits: g(EventLockWait), LockTimeouts: g(EventLockTimeout),
		RejectedSets: g(EventRejectedSet), DecodeErrors: g(EventDecodeError), CacheErrors: g(EventCacheError),
		Overloaded: g(EventOverloaded), Bypassed: g(EventBypass),
		InvalidationsDeferred: g(EventInvalidationDeferred), InvalidationRetries: g(EventInvalidationRetry),
		LocalHits: g(EventLocalHit), LocalMisses: g(EventLocalMiss), LocalEvictions: g(EventLocalEviction),
		LocalInvalidations: g(EventLocalInvalidation), LocalFlushes: g(EventLocalFlush),
		HotPromotions: g(EventHotPromotion), HotDemotions: g(EventHotDemotion),
		LeasesLost: g(EventLeaseLost), ReplicaAckShortfalls: c.shortfalls.Load(),
		Settled: c.settled.Load(),
	}
}
