package cacheaside

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/breaker"
	"github.com/asidekit/asidekit/internal/keys"
	"github.com/asidekit/asidekit/internal/topology"
)

// Options configure a Cache. A nil *Options means all defaults.
type Options struct {
	// Namespace prefixes every key and the notification channel. Default
	// "ak".
	Namespace string

	// Codec encodes values. Default JSON (encoding/json).
	Codec Codec

	// Observer, when set, receives every entity's events (for metrics
	// exporters). Default nil.
	Observer Observer

	// BreakerThreshold is the number of consecutive Redis failures after
	// which the Cache stops calling Redis for BreakerCooldown and reads go
	// straight to the loaders. Default 5; negative disables the breaker.
	BreakerThreshold int

	// BreakerCooldown is how long the breaker stays open before one call
	// probes Redis again. Default 1 second.
	BreakerCooldown time.Duration

	// MaxValueSize is the largest encoded entry (header + payload, in
	// bytes) the Cache stores; larger loaded values are served but not
	// cached, and Set returns ErrValueTooLarge. Default 8 MiB.
	MaxValueSize int

	// WriteTimeout bounds the Redis writes a load makes after its caller's
	// context is done (storing the value, releasing the lease), which run
	// detached so that waiters are not left hanging. Default 2 seconds.
	WriteTimeout time.Duration

	// LocalInvalidation is how the near caches of entities with a
	// Policy.Local (and the automatic near caches of HotKeys) learn of
	// changes. Default LocalTracking.
	LocalInvalidation LocalInvalidation

	// HotKeys, when set, gives every entity with no Policy.Local an
	// automatic near cache of its hot keys: a key read often enough in
	// this process is served from an in-process tier, invalidated as a
	// Policy.Local near cache is, and demoted when it cools; see
	// HotKeyPolicy. A Policy.Local, where set, wins. Default nil: off.
	// It is off by default because a near cache trades the cross-process
	// promise for a bounded one: a read in another process may see the
	// old value for as long as the invalidation takes to reach it (see
	// the package doc), and every process then receives the changes of
	// every entry of the namespace. Needs a *redis.Client or
	// *redis.ClusterClient (ErrLocalUnsupported otherwise).
	HotKeys *HotKeyPolicy

	// ReplicaAcks is how many replicas must confirm an invalidation
	// (Invalidate, Set, their background retries, and the bumps and patches
	// of ListGenerations) before it counts as done: each master's writes are
	// followed, on the same connection, by WAIT ReplicaAcks
	// ReplicaAckTimeout. An invalidation confirmed by fewer is queued for
	// the background retrier as if Redis had failed (the call's error
	// matches ErrInvalidationPending; reads of the id skip Redis until it is
	// applied) and counted in Stats.ReplicaAckShortfalls; a bump or patch of
	// ListGenerations confirmed by fewer returns an error, for its caller to
	// send again. It closes the failover window of asynchronous replication:
	// a promoted replica has every confirmed invalidation. Default 0: off,
	// no WAIT, a master's acknowledgement is enough. Use 1 on a Cluster or
	// Sentinel deployment with replicas; a master with fewer replicas than
	// ReplicaAcks (none yet after a failover) leaves every invalidation on
	// it pending, and each write waits ReplicaAckTimeout, until a replica
	// attaches. Needs a *redis.Client or *redis.ClusterClient; negative is
	// an error.
	ReplicaAcks int

	// ReplicaAckTimeout bounds each WAIT (rounded down to milliseconds,
	// at least 1). It must be below the client's ReadTimeout. Default
	// 100 ms (DefaultReplicaAckTimeout); negative is an error; ignored
	// when ReplicaAcks is 0.
	ReplicaAckTimeout time.Duration

	// SettleWindow is how long, after this Cache saw Redis fail (and
	// again from the first call Redis answered after failures), or found
	// that Redis lost its data, the Cache stores no load's result: its
	// misses load from the source of truth uncached, hits are served. It
	// covers the retries of other processes' invalidations that failed
	// with Redis (see settle.go), so it must cover their BreakerCooldown
	// too. A Cache with a recovery gate (AddRecoveryGate: repo/cdc's
	// Invalidator runs) does not settle: the gate covers the same writes.
	// Default BreakerCooldown + 4 s (5 s with the default cooldown);
	// negative: off.
	SettleWindow time.Duration
}

// Defaults of Options fields.
const (
	DefaultNamespace        = keys.DefaultNamespace
	DefaultBreakerThreshold = 5
	DefaultBreakerCooldown  = time.Second
	DefaultMaxValueSize     = 8 << 20
	DefaultWriteTimeout     = 2 * time.Second
)

// Cache is a read-through cache over one Redis client. Create entities on
// it with NewEntity. It is safe for concurrent use; Close it to stop its
// background work.
type Cache struct {
	client       redis.UniversalClient
	topo         topology.Topology // client's shape: every per-node question goes to it
	ns           string
	codec        Codec
	observer     Observer
	maxValue     int
	writeTimeout time.Duration
	channel      string        // value-ready notifications
	recheck      time.Duration // waiters' fallback re-check period
	br           breaker.Breaker
	health       health // zero while reads may simply ask Redis; see health.go
	hub          hub
	retry        retrier
	rec          recovery // recovery gates; see RecoveryGate
	settle       settle   // settle window and epoch marker; see Options.SettleWindow
	localMode    LocalInvalidation
	hotKeys      *HotKeyPolicy    // Options.HotKeys with defaults; nil = off
	traceFeed    func(key string) // test hook: every key of the invalidation feeds, set before the first near cache
	acks         acks             // Options.ReplicaAcks; zero = off
	nodeOpt      *redis.Options   // a standalone client's options, copied by New (see startFeeds)

	base   context.Context // cancelled by Close
	cancel context.CancelFunc

	mu     sync.Mutex     // guards closed and wg.Add
	closed bool           // guarded by mu
	near   *near          // guarded by mu; started by the first near cache
	wg     sync.WaitGroup // background goroutines
}

// New returns a Cache over client. opts may be nil.
func New(client redis.UniversalClient, opts *Options) (*Cache, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalid)
	}
	o, err := keys.CopyOptions(opts, func(o *Options) *string { return &o.Namespace }, ErrInvalid)
	if err != nil {
		return nil, err
	}
	ns := o.Namespace
	if o.Codec == nil {
		o.Codec = JSON{}
	}
	if o.BreakerThreshold == 0 {
		o.BreakerThreshold = DefaultBreakerThreshold
	}
	if o.BreakerCooldown <= 0 {
		o.BreakerCooldown = DefaultBreakerCooldown
	}
	if o.MaxValueSize <= 0 {
		o.MaxValueSize = DefaultMaxValueSize
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.LocalInvalidation != LocalTracking && o.LocalInvalidation != LocalBroadcast {
		return nil, fmt.Errorf("%w: unknown LocalInvalidation %d", ErrInvalid, o.LocalInvalidation)
	}
	var hot *HotKeyPolicy
	if o.HotKeys != nil {
		hp, err := o.HotKeys.withDefaults()
		if err != nil {
			return nil, err
		}
		if topology.Of(client).Kind() == topology.Unsupported {
			return nil, ErrLocalUnsupported
		}
		hot = &hp
	}
	ak, err := newAcks(client, o.ReplicaAcks, o.ReplicaAckTimeout)
	if err != nil {
		return nil, err
	}
	c := &Cache{
		acks:         ak,
		client:       client,
		topo:         topology.Of(client),
		ns:           ns,
		codec:        o.Codec,
		observer:     o.Observer,
		maxValue:     o.MaxValueSize,
		writeTimeout: o.WriteTimeout,
		channel:      ns + ":ready",
		recheck:      defaultRecheck,
		localMode:    o.LocalInvalidation,
		hotKeys:      hot,
	}
	c.br = breaker.Breaker{Threshold: int64(o.BreakerThreshold), Cooldown: o.BreakerCooldown}
	if o.SettleWindow == 0 {
		o.SettleWindow = o.BreakerCooldown + settleExtra
	}
	c.settle.init(c, o.SettleWindow)
	c.nodeOpt = c.topo.NodeOptions()
	c.base, c.cancel = context.WithCancel(context.Background())
	c.hub.c = c
	c.retry.c = c
	c.rec.c = c
	c.retry.poke = make(chan struct{}, 1)
	c.br.Recovered = func() {
		// Redis answers again: other processes' failed invalidations may
		// still wait for their retries (see settle.go).
		c.settle.recovered()
		c.retry.wake()
	}
	c.settle.learnAsync()
	return c, nil
}

// Close stops the Cache's shared subscription, background refreshes and
// retries, and waits for them to end. What is still queued for retry
// (invalidations, Apply's effects) gets one last try and is dropped
// (entries expire with their TTL). Reads and writes keep working after
// Close, without background work.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.hub.close()
	c.wg.Wait()
	return nil
}

// goBackground runs f on a goroutine that Close waits for, unless the
// Cache is closed (then it reports false and does nothing).
func (c *Cache) goBackground(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// detached returns a context that keeps ctx's values but not its
// cancellation, ends after timeout, and ends when the Cache is closed.
func (c *Cache) detached(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	d, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	stop := context.AfterFunc(c.base, cancel)
	return d, func() { stop(); cancel() }
}

// redisErr classifies the error of a Redis call for the breaker: nil and
// redis.Nil are successes; a failure caused by the caller's own context is
// neither (and is returned as the context's error).
func (c *Cache) redisErr(ctx context.Context, err error) (failed bool, ctxErr error) {
	if err == nil || err == redis.Nil {
		c.answered()
		return false, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return false, cerr
	}
	c.br.Failure()
	c.health.set(failing)
	c.rec.failed()
	c.settle.extend()
	return true, nil
}

// answered records a call that Redis answered: the breaker closes, and
// the health word's failing bit with it (health.go). Clear, then look: a
// failure whose bit the clear removed counted before the look, which sets
// the bit again.
func (c *Cache) answered() {
	c.br.Success()
	if c.health.Load()&failing == 0 {
		return
	}
	c.health.And(^failing)
	if !c.br.Clean() {
		c.health.set(failing)
	}
}

// Client returns the Redis client the Cache was built on, for companions
// that should live on the same Redis (a Bloom filter, for one).
func (c *Cache) Client() redis.UniversalClient { return c.client }

// PendingInvalidations returns how many invalidations failed (Redis
// unreachable or too slow) and wait for the background retry. Until one
// is applied this process reads its id from the loader, uncached; a
// service can wait for 0 before it reports ready after a bulk write.
func (c *Cache) PendingInvalidations() int { return c.retry.size() }

// Namespace returns the namespace that prefixes the Cache's keys.
func (c *Cache) Namespace() string { return c.ns }
