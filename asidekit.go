// Package asidekit says once what the components of one service share: the
// Redis client, the key namespace and the database. A Kit builds the
// cache, Bloom filters, rate limiters and sequence generators of a service
// with that namespace, so it is written in one place:
//
//	kit, err := asidekit.New(asidekit.Config{Namespace: "catalog", Redis: rdb, DB: db})
//	products, err := repo.New[Product, string](db, kit.Cache(), &repo.Options{
//		Filter: kit.FilterOptions(&bloom.Options{Capacity: 1e6, FalsePositiveRate: 0.01}),
//	})
//	orders, err := kit.Generator(nil)
//	perIP, err := limit.NewGCRA(rdb, limit.GCRA{Rate: limit.PerSecond(10)}, kit.LimitOptions(nil))
//
// Unlike the packages' own Options, whose Namespace defaults to "ak", a
// Config's Namespace is required: two services built from a Kit cannot
// share an entity's cache keys by both leaving it out (two services with a
// products table would otherwise read each other's entries). Within a
// namespace, repo.New and NewEntity claim each entity's name for its owner
// (a repository's database and table, an entity's Go type) and fail with
// ErrNamespaceCollision when another owner holds it.
package asidekit

import (
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/internal/nodeguard"
	"github.com/asidekit/asidekit/seqgen"
)

// ErrInvalid is returned (wrapped, with the reason) by New and the Kit's
// builders for a Config they cannot use or options in another namespace.
// Options a component refuses give its package's ErrInvalid: New wraps
// cacheaside's in this one, Filter and Generator return bloom's and
// seqgen's as they are.
var ErrInvalid = errors.New("asidekit: invalid argument")

// ErrClosed is returned (wrapped) by the writes of a repository on a
// closed Kit's Cache, before anything is written: a write whose
// invalidation failed could no longer be retried. Reads go on. It is
// cacheaside.ErrClosed (and repo.ErrClosed).
var ErrClosed = cacheaside.ErrClosed

// Config is what the components of one service share.
type Config struct {
	// Namespace prefixes every Redis key and channel of the service's
	// components. Required: name the service ("catalog", "billing").
	Namespace string
	// Redis is the client every component uses. Required.
	Redis redis.UniversalClient
	// DB is the database of Generator's segments. Needed by Generator only.
	DB *gorm.DB
	// Cache holds the cache's other options; its Namespace must be empty
	// or equal Namespace. Default nil: cacheaside's defaults.
	Cache *cacheaside.Options
	// Guard configures the node guard New installs on Redis (see
	// GuardOptions). Default nil: a guard with GuardOptions' defaults.
	// With a guard, the Cache's own breaker is off unless
	// Cache.BreakerThreshold is set, and so are the breakers of the
	// limiters made with LimitOptions (unless BreakerThreshold is set)
	// and of Generator's generators (unless BreakerFailures is set): the
	// guard plays their part, and they call Redis again the moment it
	// finds the node back.
	Guard *GuardOptions
	// Processes is the number of processes of the service that share its
	// rate limits. While Redis is down a limiter made with LimitOptions
	// limits in the process (limit.Options.LocalFallback), each process
	// at 1/Processes of the limit and of the rate. Default 1: each
	// process allows the whole limit on its own (as a token bucket), so
	// during an outage it refuses a client about when the shared limit
	// would have, and the fleet allows up to N times the limit. Set it to the number
	// of replicas for a fleet that holds about the limit while the load
	// is spread evenly (a process that takes more than its share is then
	// refused sooner than the shared limit would). Negative is invalid.
	Processes int
}

// Kit builds a service's components with its Config. Close closes the
// Cache and the generators it made.
type Kit struct {
	cfg     Config
	cache   *cacheaside.Cache
	guards  *nodeguard.Set // nil: none installed
	release func()         // of the guards' registration

	mu   sync.Mutex
	gens []*seqgen.Generator // made by Generator; guarded by mu
}

// New checks cfg, installs the node guard on cfg.Redis (see
// GuardOptions) and makes the service's Cache.
func New(cfg Config) (*Kit, error) {
	if cfg.Namespace == "" {
		return nil, fmt.Errorf("%w: Namespace is required (the service's name), so that two services never share keys", ErrInvalid)
	}
	if cfg.Redis == nil {
		return nil, fmt.Errorf("%w: nil Redis client", ErrInvalid)
	}
	var co cacheaside.Options
	if cfg.Cache != nil {
		co = *cfg.Cache
	}
	if err := sameNamespace("cacheaside.Options", &co.Namespace, cfg.Namespace); err != nil {
		return nil, err
	}
	if cfg.Processes < 0 {
		return nil, fmt.Errorf("%w: Processes %d: negative", ErrInvalid, cfg.Processes)
	}
	if g := cfg.Guard; g != nil && (g.Threshold < 0 || g.Cooldown < 0) {
		return nil, fmt.Errorf("%w: GuardOptions Threshold %d, Cooldown %v: negative", ErrInvalid, g.Threshold, g.Cooldown)
	}
	guards, release := installGuard(cfg)
	if guards != nil && co.BreakerThreshold == 0 {
		// The guard is the Cache's breaker: it fails a call at once while
		// the node is down and lets reads use Redis again (and wakes the
		// invalidation retrier) the moment a probe finds it back, where a
		// breaker of the Cache's own would wait out its cooldown.
		co.BreakerThreshold = -1
	}
	c, err := cacheaside.New(cfg.Redis, &co)
	if err != nil {
		release()
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	warnClient(cfg.Redis)
	return &Kit{cfg: cfg, cache: c, guards: guards, release: release}, nil
}

// sameNamespace sets *ns to want when empty, and refuses another value.
func sameNamespace(what string, ns *string, want string) error {
	switch *ns {
	case "":
		*ns = want
	case want:
	default:
		return fmt.Errorf("%w: %s.Namespace %q differs from the Kit's %q", ErrInvalid, what, *ns, want)
	}
	return nil
}

// Namespace returns the Kit's namespace.
func (k *Kit) Namespace() string { return k.cfg.Namespace }

// Cache returns the service's Cache (for cacheaside.NewEntity and repo.New).
func (k *Kit) Cache() *cacheaside.Cache { return k.cache }

// Close closes the Cache and the generators made by Generator, and
// releases the Kit's share of the node guard (its hooks stay on the
// client). After Close the writes of the repositories on the Cache
// return ErrClosed and the generators seqgen.ErrClosed, before anything
// is written; reads (Get, GetMany, GetBy, lists) go on, from Redis and
// the database, without background work (no refreshes, no invalidation
// retries). A second Close does nothing and returns nil.
func (k *Kit) Close() error {
	k.release()
	k.mu.Lock()
	gens := k.gens
	k.gens = nil
	k.mu.Unlock()
	for _, g := range gens {
		_ = g.Close() // never fails
	}
	return k.cache.Close()
}

// FilterOptions returns a copy of opts (nil: bloom's defaults) in the
// Kit's namespace, for repo.Options.Filter or bloom.New. It panics when
// opts names another namespace: that is a programming error, caught by the
// first test that builds the filter.
func (k *Kit) FilterOptions(opts *bloom.Options) *bloom.Options {
	var o bloom.Options
	if opts != nil {
		o = *opts
	}
	if err := sameNamespace("bloom.Options", &o.Namespace, k.cfg.Namespace); err != nil {
		panic(err)
	}
	return &o
}

// Filter returns the Bloom filter name in the Kit's namespace.
func (k *Kit) Filter(name string, opts *bloom.Options) (*bloom.Filter, error) {
	var o bloom.Options
	if opts != nil {
		o = *opts
	}
	if err := sameNamespace("bloom.Options", &o.Namespace, k.cfg.Namespace); err != nil {
		return nil, err
	}
	return bloom.New(k.cfg.Redis, name, &o)
}

// LimitOptions returns a copy of opts (nil: limit's defaults) in the Kit's
// namespace, for the guard/limit constructors. It panics when opts names
// another namespace, as FilterOptions does.
//
// A Redis outage never refuses every call of a limiter made with it:
// unless opts sets FailOpen or LocalFallback, the copy has LocalFallback
// set to Config.Processes (default 1), so that while Redis fails each
// process limits on its own at its share of the limit (see
// Config.Processes), and FailOpen set, so that a Semaphore, which has no
// local fallback, lets calls through. A limiter still refuses the keys
// over their local share, with a nil error. Set LocalFallback to -1 (and
// leave FailOpen false) for a limiter that refuses every call while Redis
// fails.
func (k *Kit) LimitOptions(opts *limit.Options) *limit.Options {
	var o limit.Options
	if opts != nil {
		o = *opts
	}
	if err := sameNamespace("limit.Options", &o.Namespace, k.cfg.Namespace); err != nil {
		panic(err)
	}
	if o.LocalFallback == 0 && !o.FailOpen {
		o.LocalFallback, o.FailOpen = max(k.cfg.Processes, 1), true
	}
	if k.guards != nil && o.BreakerThreshold == 0 {
		// The node guard is the limiter's breaker: a breaker of its own
		// would keep it off Redis for its cooldown after the guard found
		// the node back.
		o.BreakerThreshold = -1
	}
	return &o
}

// Generator returns a sequence generator in the Kit's namespace, reserving
// its segments in Config.DB. Close closes it.
func (k *Kit) Generator(opts *seqgen.Options) (*seqgen.Generator, error) {
	if k.cfg.DB == nil {
		return nil, fmt.Errorf("%w: Generator needs Config.DB", ErrInvalid)
	}
	var o seqgen.Options
	if opts != nil {
		o = *opts
	}
	if err := sameNamespace("seqgen.Options", &o.Namespace, k.cfg.Namespace); err != nil {
		return nil, err
	}
	if k.guards != nil && o.BreakerFailures == 0 {
		// The node guard is the generator's breaker, as for LimitOptions.
		o.BreakerFailures = -1
	}
	g, err := seqgen.New(k.cfg.Redis, k.cfg.DB, &o)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.gens = append(k.gens, g)
	k.mu.Unlock()
	return g, nil
}
