package topology

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// other is a client Of does not know (a Ring, a custom UniversalClient,
// nil): commands go through it as it routes them; no per-node work.
type other struct{ c redis.UniversalClient }

func (other) Kind() Kind { return Unsupported }

func (other) Timeouts() (Timeouts, bool) { return Timeouts{}, false }

func (other) NodeOptions() *redis.Options { return nil }

func (other) Masters(context.Context) (map[string]*redis.Client, error) {
	return nil, ErrUnsupported
}

func (other) ForEachMaster(context.Context, func(context.Context, *redis.Client) error) error {
	return ErrUnsupported
}

func (other) MasterForKey(context.Context, string) (*redis.Client, error) {
	return nil, ErrUnsupported
}

func (other) Reload(context.Context) {}

func (other) WatchNodes(context.Context, func(*redis.Client)) {}

func (o other) MGet(ctx context.Context, keys []string) ([]any, error) {
	return o.c.MGet(ctx, keys...).Result()
}

func (o other) Subscribe(ctx context.Context, channel string) *redis.PubSub {
	return o.c.Subscribe(ctx, channel)
}

func (o other) Publish(ctx context.Context, channel string, msg any) *redis.IntCmd {
	return o.c.Publish(ctx, channel, msg)
}
