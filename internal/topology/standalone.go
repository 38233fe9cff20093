package topology

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// standalone is a *redis.Client: one server, or the master of a Sentinel
// failover client. It is its own only master.
type standalone struct{ c *redis.Client }

func (standalone) Kind() Kind { return Standalone }

func (s standalone) Timeouts() (Timeouts, bool) {
	o := s.c.Options()
	return Timeouts{Dial: o.DialTimeout, Read: o.ReadTimeout, Write: o.WriteTimeout, ContextTimeoutEnabled: o.ContextTimeoutEnabled}, true
}

func (s standalone) NodeOptions() *redis.Options {
	opt := *s.c.Options()
	if m := opt.MaintNotificationsConfig; m != nil { // updated by the client's first connection
		mc := *m
		opt.MaintNotificationsConfig = &mc
	}
	return &opt
}

func (s standalone) Masters(context.Context) (map[string]*redis.Client, error) {
	return map[string]*redis.Client{s.c.Options().Addr: s.c}, nil
}

func (s standalone) ForEachMaster(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	return fn(ctx, s.c)
}

func (s standalone) MasterForKey(context.Context, string) (*redis.Client, error) { return s.c, nil }

func (standalone) Reload(context.Context) {}

func (s standalone) WatchNodes(_ context.Context, fn func(*redis.Client)) { fn(s.c) }

func (s standalone) MGet(ctx context.Context, keys []string) ([]any, error) {
	return s.c.MGet(ctx, keys...).Result()
}

func (s standalone) Subscribe(ctx context.Context, channel string) *redis.PubSub {
	return s.c.Subscribe(ctx, channel)
}

func (s standalone) Publish(ctx context.Context, channel string, msg any) *redis.IntCmd {
	return s.c.Publish(ctx, channel, msg)
}
