package cacheaside

import (
	"fmt"
	"time"
)

// Strategy decides how concurrent misses of one key are rebuilt.
type Strategy int

const (
	// None loads on every miss: the unprotected baseline.
	None Strategy = iota
	// SingleFlight shares one load among concurrent misses of a key in
	// this process.
	SingleFlight
	// Mutex allows one load of a key across all processes: the winner of a
	// Redis lease loads, the others wait for a value-ready notification (one
	// shared subscription per Cache), bounded by WaitTimeout. GetMany takes
	// the leases of its misses too and loads only the ids it won.
	Mutex
	// AsyncRefresh serves a value past its logical expiry (within Grace) at
	// once and refreshes it in the background under the lease. A cold key
	// is rebuilt as with Mutex.
	AsyncRefresh
	// EarlyRefresh recomputes a value before it expires with probability
	// growing as exp(-remaining/(Δ·β)) (XFetch), Δ being the last load's
	// duration; the recomputing reader holds the lease and the others keep
	// the current value. A cold key is rebuilt as with Mutex.
	EarlyRefresh
)

var strategyNames = [...]string{"None", "SingleFlight", "Mutex", "AsyncRefresh", "EarlyRefresh"}

// String returns the strategy's name, e.g. "Mutex".
func (s Strategy) String() string {
	if s >= 0 && int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// Policy configures one entity. The zero Policy is usable: a 10-minute TTL
// with 10% jitter, absences cached for a minute, Strategy None.
//
// Every field follows one rule: its zero value means the documented default,
// and for the fields that can be switched off (Jitter, NullTTL, Grace,
// MaxConcurrentLoads) Disabled, or any negative value, switches them off.
// repo uses the same Policy with the same meanings.
type Policy struct {
	// TTL is the base lifetime of a cached value. Default 10 minutes.
	TTL time.Duration

	// Jitter spreads every write's lifetime uniformly over
	// [TTL·(1−Jitter), TTL·(1+Jitter)]; it applies to NullTTL too. Default
	// 0.1 (DefaultJitter); Disabled turns jitter off; at most 1.
	Jitter float64

	// NullTTL is how long a "not found" answer is cached (jittered). Default
	// one minute (DefaultNullTTL); Disabled turns null caching off, so every
	// read of an absent id calls the loader.
	NullTTL time.Duration

	// Strategy is the breakdown strategy. Default None.
	Strategy Strategy

	// Filter, when set, is asked about every id that misses the cache
	// before the loader is called; "definitely absent" answers ErrNotFound
	// with no load. Default nil: no pre-filter. A Filter error is counted
	// as a cache error and ignored (the loader decides).
	Filter Filter

	// Grace is how long past its logical expiry a value is kept and may be
	// served stale: by AsyncRefresh while it refreshes, and by every
	// strategy when the loader fails. Default none, except for AsyncRefresh
	// whose default is TTL; Disabled means no grace for AsyncRefresh too.
	Grace time.Duration

	// LockTTL is the lifetime of a rebuild lease (Mutex, AsyncRefresh,
	// EarlyRefresh). While the holder's loader runs, the lease is renewed
	// to LockTTL every LockTTL/3, so a slow load (a slow query, a GC pause,
	// CPU starvation) keeps it and no other process loads the same value
	// meanwhile. A holder that dies, or whose loader ignores its cancelled
	// context, loses the lease within LockTTL; then another process may
	// rebuild. Default 3 seconds.
	LockTTL time.Duration

	// WaitTimeout bounds how long a caller waits for another process's
	// rebuild before it gets ErrWaitTimeout (or a stale value within
	// Grace). GetMany counts it from when it starts waiting, after it has
	// loaded the ids whose leases it got. Default 5 seconds.
	WaitTimeout time.Duration

	// MaxConcurrentLoads caps the loader calls this entity runs at once in
	// this process, on every path (normal misses and the fail-open path
	// when Redis is down; a GetMany batch load takes one slot). A caller
	// over the cap gets ErrOverloaded at once. Default 64; Disabled means
	// no cap.
	MaxConcurrentLoads int

	// Beta is XFetch's β for EarlyRefresh: larger recomputes earlier.
	// Default 1.
	Beta float64

	// RefreshTimeout bounds a background refresh (AsyncRefresh), which runs
	// on a context detached from the caller's; its lease is renewed until
	// then. Default LockTTL.
	RefreshTimeout time.Duration

	// Local, when set, keeps the entity's hot values in this process too
	// (a near cache), invalidated by Redis itself; see LocalPolicy. Default
	// nil: every read goes to Redis.
	Local *LocalPolicy
}

// Disabled switches off a Policy field that has an off state: Jitter,
// NullTTL, Grace, MaxConcurrentLoads. It is untyped, so it fits the
// durations, the ratio and the count alike; any negative value means the same.
const Disabled = -1

// Default values of Policy fields.
const (
	DefaultTTL                = 10 * time.Minute
	DefaultJitter             = 0.1
	DefaultNullTTL            = time.Minute
	DefaultLockTTL            = 3 * time.Second
	DefaultWaitTimeout        = 5 * time.Second
	DefaultMaxConcurrentLoads = 64
	DefaultBeta               = 1.0
)

// withDefaults returns p with zero fields replaced by their defaults, or an
// error for values that make no sense.
func (p Policy) withDefaults() (Policy, error) {
	if p.TTL < 0 || p.LockTTL < 0 || p.WaitTimeout < 0 || p.RefreshTimeout < 0 || p.Beta < 0 {
		return p, fmt.Errorf("%w: negative TTL, LockTTL, WaitTimeout, RefreshTimeout or Beta", ErrInvalid)
	}
	if p.Strategy < None || p.Strategy > EarlyRefresh {
		return p, fmt.Errorf("%w: unknown strategy %v", ErrInvalid, p.Strategy)
	}
	if p.Jitter > 1 {
		return p, fmt.Errorf("%w: jitter %v > 1", ErrInvalid, p.Jitter)
	}
	if p.TTL == 0 {
		p.TTL = DefaultTTL
	}
	switch {
	case p.Jitter == 0:
		p.Jitter = DefaultJitter
	case p.Jitter < 0:
		p.Jitter = 0
	}
	switch {
	case p.NullTTL == 0:
		p.NullTTL = DefaultNullTTL
	case p.NullTTL < 0:
		p.NullTTL = 0
	}
	switch {
	case p.Grace == 0 && p.Strategy.servesStale():
		p.Grace = p.TTL
	case p.Grace < 0:
		p.Grace = 0
	}
	if p.LockTTL == 0 {
		p.LockTTL = DefaultLockTTL
	}
	if p.WaitTimeout == 0 {
		p.WaitTimeout = DefaultWaitTimeout
	}
	if p.MaxConcurrentLoads == 0 {
		p.MaxConcurrentLoads = DefaultMaxConcurrentLoads
	}
	if p.Beta == 0 {
		p.Beta = DefaultBeta
	}
	if p.RefreshTimeout == 0 {
		p.RefreshTimeout = p.LockTTL
	}
	if p.Local != nil { // near cache
		lp, err := p.Local.withDefaults()
		if err != nil {
			return p, err
		}
		p.Local = &lp
	}
	return p, nil
}
