package cacheaside

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asidekit/asidekit/internal/topology"
)

// LocalInvalidation chooses how near caches learn of changes; see
// Options.LocalInvalidation.
type LocalInvalidation int

const (
	// LocalTracking uses Redis's server-assisted client-side caching:
	// CLIENT TRACKING ON BCAST PREFIX "<namespace>:{" on a connection of
	// the Cache's own (one per master on a Cluster), subscribed to
	// __redis__:invalidate. Every change of an entry reaches every process,
	// whoever made it: writes through asidekit, plain SET or DEL from
	// elsewhere, expiries, evictions, FLUSHALL. Needs Redis 6 or later. On
	// a Cluster, the masters are listed again every second (CLUSTER SLOTS):
	// a master that appears is tracked from then on, and one that
	// disappears has its connection closed; either change flushes the near
	// caches, which fill again once every master's connection is confirmed.
	// Between a topology change and the next listing (up to a second), a
	// key written on a master not yet tracked may be served stale.
	LocalTracking LocalInvalidation = iota

	// LocalBroadcast announces the writes made through asidekit (Set and
	// Invalidate) on a pub/sub channel of the namespace (sharded pub/sub on
	// a Cluster: when the channel's slot moves, the server ends the
	// subscription, the near caches are flushed and the feed subscribes
	// again on the slot's new owner). Changes made elsewhere (a plain SET or DEL, an eviction)
	// are not seen: local entries then live up to Local.TTL. Every process
	// writing the entity must configure its Local policy, for only those
	// announce.
	LocalBroadcast
)

// ErrLocalUnsupported is returned by NewEntity for a Policy.Local on a
// client with no near cache support (a Ring, or a custom UniversalClient):
// only *redis.Client (standalone, Sentinel failover) and
// *redis.ClusterClient are supported. It wraps ErrInvalid.
var ErrLocalUnsupported = fmt.Errorf("%w: near cache needs %s", ErrInvalid, topology.Supported)

// near is a Cache's invalidation feed for its near caches: the
// subscriptions, and the tiers they invalidate.
type near struct {
	c    *Cache
	mode LocalInvalidation

	// epoch is odd while every subscription is up (the tiers may fill),
	// even otherwise; it changes on every change of that, and on every
	// flush, which refuses the fills of all reads that began before.
	epoch atomic.Uint64

	// tiers maps an entity's escaped name to its tier; copied on write
	// under mu so that dispatch reads it with no lock.
	tiers atomic.Pointer[map[string]invalidatee]

	mu   sync.Mutex
	down int           // guarded by mu: subscriptions (or discoveries) not up
	up   chan struct{} // guarded by mu: closed while epoch is odd
}

// invalidatee is a tier as its feed sees it.
type invalidatee interface {
	invalidated(key string)
	flush()
	stop() // ends the store's background work (at Close)
}

// nearFeed returns the Cache's feed, started by the first entity with a
// near cache.
func (c *Cache) nearFeed() (*near, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.near != nil {
		return c.near, nil
	}
	if c.topo.Kind() == topology.Unsupported {
		return nil, ErrLocalUnsupported
	}
	n := &near{c: c, mode: c.localMode, up: make(chan struct{}), down: 1}
	n.tiers.Store(&map[string]invalidatee{})
	if c.closed {
		return nil, ErrClosed
	}
	c.near = n
	// Called with c.mu held: goBackground would take it again.
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		n.startFeeds() // returns when the Cache is closed
		for _, t := range *n.tiers.Load() {
			t.stop()
		}
	}()
	return n, nil
}

// WaitLocal blocks until the near caches of c may serve: until the Cache's
// invalidation subscriptions are confirmed (after a connection loss, until
// they are again). Before that, reads skip the near cache and go to Redis.
// It returns at once for a Cache without near caches, and ctx's error if
// ctx ends first.
func (c *Cache) WaitLocal(ctx context.Context) error {
	c.mu.Lock()
	n := c.near
	c.mu.Unlock()
	if n == nil {
		return nil
	}
	n.mu.Lock()
	up := n.up
	n.mu.Unlock()
	select {
	case <-up:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *near) register(esc string, t invalidatee) {
	n.mu.Lock()
	defer n.mu.Unlock()
	old := *n.tiers.Load()
	m := make(map[string]invalidatee, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[esc] = t
	n.tiers.Store(&m)
	if n.c.base.Err() != nil { // closed meanwhile: the feed may have stopped the tiers already
		t.stop()
	}
}

// changeDown adds delta to the count of subscriptions not up. Whenever one
// goes down (delta > 0) every tier is flushed, after the epoch changed.
func (n *near) changeDown(delta int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down += delta
	e := n.epoch.Load() + 1
	if (e%2 == 1) != (n.down == 0) {
		e++
	}
	n.epoch.Store(e)
	if n.down == 0 {
		close(n.up)
		return
	}
	if delta > 0 {
		select {
		case <-n.up:
			n.up = make(chan struct{})
		default:
		}
		n.flushLocked()
	}
}

func (n *near) flushLocked() {
	for _, t := range *n.tiers.Load() {
		t.flush()
	}
}

// dispatch routes the key of a changed entry to its entity's tier.
func (n *near) dispatch(key string) {
	if n.c.traceFeed != nil {
		n.c.traceFeed(key)
	}
	rest, ok := strings.CutPrefix(key, n.c.ns+":{")
	if !ok || !strings.HasSuffix(rest, "}") { // not an entry (a lease, a version)
		return
	}
	esc, _, ok := strings.Cut(rest, ":")
	if !ok {
		return
	}
	if t := (*n.tiers.Load())[esc]; t != nil {
		t.invalidated(key)
	}
}

// announce publishes the keys written by this process (LocalBroadcast).
func (n *near) announce(ctx context.Context, keys []string) error {
	if n.mode != LocalBroadcast || len(keys) == 0 {
		return nil
	}
	msg := strings.Join(keys, "\n")
	if err := n.c.topo.Publish(ctx, n.channel(), msg).Err(); err != nil {
		return fmt.Errorf("cacheaside: near cache broadcast: %w", err)
	}
	return nil
}

// channel is LocalBroadcast's channel (one hash slot on a Cluster).
func (n *near) channel() string { return n.c.ns + ":{near}" }
