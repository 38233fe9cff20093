package cacheaside

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
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

// startNode runs the feed of a standalone (or Sentinel) client.
func (n *near) startNode(node *redis.Client) {
	if n.mode == LocalBroadcast {
		n.run(func(ctx context.Context) *redis.PubSub { return node.Subscribe(ctx, n.channel()) })
		return
	}
	n.runTracking(node.Options())
}

// startCluster runs one tracking feed per master (LocalTracking), or one
// sharded subscription (LocalBroadcast). Masters are those known when the
// first entity with a near cache is created.
func (n *near) startCluster(cl *redis.ClusterClient) {
	if n.mode == LocalBroadcast {
		n.run(func(ctx context.Context) *redis.PubSub { return cl.SSubscribe(ctx, n.channel()) })
		return
	}
	ctx := n.c.base
	var (
		mu      sync.Mutex
		masters []*redis.Options
	)
	for backoff := feedRetryMin; ; {
		masters = masters[:0]
		err := cl.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
			mu.Lock()
			masters = append(masters, node.Options())
			mu.Unlock()
			return nil
		})
		if err == nil && len(masters) > 0 {
			break
		}
		if !pause(ctx, &backoff) {
			return
		}
	}
	n.changeDown(len(masters) - 1) // one feed per master instead of the discovery
	for _, o := range masters[1:] {
		n.c.goBackground(func() { n.runTracking(o) })
	}
	n.runTracking(masters[0])
}

// runTracking runs the feed of one node on a client of its own, whose
// every connection turns tracking on, redirected to itself, before it
// subscribes to the invalidations.
func (n *near) runTracking(node *redis.Options) {
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
	n.run(func(ctx context.Context) *redis.PubSub { return cl.Subscribe(ctx, invalidateChannel) })
}

// run keeps a subscription going until the Cache is closed.
func (n *near) run(subscribe func(context.Context) *redis.PubSub) {
	ctx := n.c.base
	for backoff := feedRetryMin; ; {
		if n.session(ctx, subscribe) {
			backoff = feedRetryMin
		}
		if !pause(ctx, &backoff) {
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

// pause waits *backoff (then doubles it, up to feedRetryMax), or reports
// false if ctx ends first.
func pause(ctx context.Context, backoff *time.Duration) bool {
	t := time.NewTimer(*backoff)
	defer t.Stop()
	*backoff = min(2**backoff, feedRetryMax)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
