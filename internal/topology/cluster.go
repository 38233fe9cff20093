package topology

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// cluster is a *redis.ClusterClient (redis.NewFailoverClusterClient's
// too). go-redis keeps one *redis.Client per node.
type cluster struct{ c *redis.ClusterClient }

func (cluster) Kind() Kind { return Cluster }

func (cl cluster) Timeouts() (Timeouts, bool) {
	o := cl.c.Options()
	return Timeouts{Dial: o.DialTimeout, Read: o.ReadTimeout, Write: o.WriteTimeout, ContextTimeoutEnabled: o.ContextTimeoutEnabled}, true
}

func (cluster) NodeOptions() *redis.Options { return nil }

func (cl cluster) Masters(ctx context.Context) (map[string]*redis.Client, error) {
	var mu sync.Mutex
	nodes := make(map[string]*redis.Client)
	err := cl.c.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock() // ForEachMaster runs fn concurrently
		nodes[c.Options().Addr] = c
		mu.Unlock()
		return nil
	})
	return nodes, err
}

func (cl cluster) ForEachMaster(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	return cl.c.ForEachMaster(ctx, fn)
}

func (cl cluster) MasterForKey(ctx context.Context, key string) (*redis.Client, error) {
	return cl.c.MasterForKey(ctx, key)
}

func (cl cluster) Reload(ctx context.Context) { cl.c.ReloadState(ctx) }

func (cl cluster) WatchNodes(ctx context.Context, fn func(*redis.Client)) {
	cl.c.OnNewNode(fn)
	_ = cl.c.ForEachShard(ctx, func(_ context.Context, n *redis.Client) error {
		fn(n)
		return nil
	})
}

func (cl cluster) MGet(ctx context.Context, keys []string) ([]any, error) {
	return mgetBySlot(ctx, cl.c, keys)
}

func (cl cluster) Subscribe(ctx context.Context, channel string) *redis.PubSub {
	return cl.c.SSubscribe(ctx, channel)
}

func (cl cluster) Publish(ctx context.Context, channel string, msg any) *redis.IntCmd {
	return cl.c.SPublish(ctx, channel, msg)
}
