package cacheaside

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/topology"
)

// The invalidation subscriptions: health checks and reconnection.
const (
	// feedHealth is how long a subscription may stay silent before it is
	// pinged; a ping unanswered for as long again ends the session.
	feedHealth = 3 * time.Second
	// feedRetryMin and feedRetryMax bound the pause before a new session.
	feedRetryMin = 5 * time.Millisecond
	feedRetryMax = time.Second
	// invalidateChannel is where Redis sends tracking invalidations to a
	// RESP2 connection.
	invalidateChannel = "__redis__:invalidate"
)

// startFeeds runs the Cache's invalidation feeds until it is closed. With
// LocalBroadcast, one subscription to the channel (sharded on a Cluster).
// With LocalTracking, on a standalone (or Sentinel) client one tracking
// feed, made from the options copied when the Cache was made (go-redis
// updates a client's options while it makes its first connection, so
// copying them later could race with the Cache's own calls); on a Cluster
// one per master, following its topology.
func (n *near) startFeeds() {
	topo := n.c.topo
	if n.mode == LocalBroadcast {
		first := true
		n.run(n.c.base, func(ctx context.Context) *redis.PubSub {
			if !first {
				// On a Cluster the channel's slot may have moved (the
				// server ends the subscription then): find its owner anew.
				topo.Reload(ctx)
			}
			first = false
			return topo.Subscribe(ctx, n.channel())
		})
		return
	}
	if topo.Kind() == topology.Standalone {
		n.runTracking(n.c.base, n.c.nodeOpt)
		return
	}
	list := clusterMasters
	n.followMasters(func(ctx context.Context) (map[string]*redis.Options, error) { return list(ctx, topo) })
}

// clusterRecheck is how often a Cluster's masters are listed again, so
// that the tracking feeds follow its topology.
const clusterRecheck = time.Second

// clusterMasters lists the masters of a Cluster that serve slots (CLUSTER
// SLOTS, reloaded on every call), with their options, by address. A
// variable so that tests can simulate topology changes.
var clusterMasters = func(ctx context.Context, topo topology.Topology) (map[string]*redis.Options, error) {
	nodes, err := topo.Masters(ctx)
	out := make(map[string]*redis.Options, len(nodes))
	for addr, node := range nodes {
		out[addr] = node.Options()
	}
	return out, err
}

// followMasters keeps one tracking feed per master that list returns,
// listing them again every clusterRecheck until the Cache is closed. A
// master that appears (slots moved to a new node, a replica promoted) is
// tracked from then on: the tiers are flushed, and not filled until its
// feed is confirmed, for they may hold keys it changed untracked. A master
// that disappears has its feed stopped, which flushes the tiers as any
// loss of a confirmed feed does. The discovery itself counts as one
// subscription not up until the first listing.
func (n *near) followMasters(list func(context.Context) (map[string]*redis.Options, error)) {
	ctx := n.c.base
	feeds := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer wg.Wait() // the feeds end with ctx
	discovering := true
	retry := backoff.New(feedRetryMin, feedRetryMax)
	for {
		masters, err := list(ctx)
		if err != nil || len(masters) == 0 {
			if retry.Wait(ctx) != nil {
				return
			}
			continue
		}
		retry.Reset()
		for addr, stop := range feeds {
			if _, ok := masters[addr]; !ok {
				stop()
				delete(feeds, addr)
			}
		}
		for addr, o := range masters {
			if _, ok := feeds[addr]; ok {
				continue
			}
			n.changeDown(1) // the new feed, not up until confirmed
			fctx, stop := context.WithCancel(ctx)
			feeds[addr] = stop
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.runTracking(fctx, o)
				n.changeDown(-1) // stopped: it no longer counts
			}()
		}
		if discovering {
			discovering = false
			n.changeDown(-1)
		}
		if backoff.Sleep(ctx, clusterRecheck) != nil {
			return
		}
	}
}

// runTracking runs the feed of one node on a client of its own, whose
// every connection turns tracking on, redirected to itself, before it
// subscribes to the invalidations.
func (n *near) runTracking(ctx context.Context, node *redis.Options) {
	opt := *node
	opt.Protocol = 2 // invalidations as pub/sub messages
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = 1, 0, 0
	if opt.ClientName == "" {
		opt.ClientName = n.c.ns + ":near" // to be found in CLIENT LIST
	}
	prefix := n.c.ns + ":{"
	onConnect := node.OnConnect
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if onConnect != nil {
			if err := onConnect(ctx, cn); err != nil {
				return err
			}
		}
		id, err := cn.ClientID(ctx).Result()
		if err != nil {
			return err
		}
		return cn.Do(ctx, "CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST", "PREFIX", prefix).Err()
	}
	cl := redis.NewClient(&opt)
	defer func() { _ = cl.Close() }()
	n.run(ctx, func(ctx context.Context) *redis.PubSub { return cl.Subscribe(ctx, invalidateChannel) })
}

// run keeps a subscription going until ctx ends.
func (n *near) run(ctx context.Context, subscribe func(context.Context) *redis.PubSub) {
	retry := backoff.New(feedRetryMin, feedRetryMax)
	for {
		if n.session(ctx, subscribe) {
			retry.Reset()
		}
		if retry.Wait(ctx) != nil {
			return
		}
	}
}

// session runs one subscription until it fails, and reports whether it
// was confirmed. While confirmed it counts as up; when it ends, the tiers
// are flushed before they may serve again.
func (n *near) session(ctx context.Context, subscribe func(context.Context) *redis.PubSub) (confirmed bool) {
	ps := subscribe(ctx)
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer func() {
		stop()
		_ = ps.Close()
		if confirmed {
			n.changeDown(1)
		}
	}()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, feedHealth)
		if err != nil {
			// Any other error (a lost connection, a reply it cannot parse
			// such as FLUSHALL's null key list) ends the session.
			var ne net.Error
			if !pinged && errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil && ps.Ping(ctx) == nil {
				pinged = true
				continue
			}
			return confirmed
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if !confirmed && (m.Kind == "subscribe" || m.Kind == "ssubscribe") {
				confirmed = true
				n.changeDown(-1)
			}
			if m.Kind == "sunsubscribe" || m.Kind == "unsubscribe" {
				// The server dropped the subscription (a sharded channel's
				// slot moved to another node): nothing more will come.
				return confirmed
			}
		case *redis.Pong:
			pinged = false
		case *redis.Message:
			n.receive(m)
		}
	}
}

// receive dispatches the keys of one invalidation message.
func (n *near) receive(m *redis.Message) {
	if m.Channel == invalidateChannel {
		for _, k := range m.PayloadSlice {
			n.dispatch(k)
		}
		if m.PayloadSlice == nil && m.Payload != "" {
			n.dispatch(m.Payload)
		}
		return
	}
	for k := range strings.SplitSeq(m.Payload, "\n") {
		n.dispatch(k)
	}
}
