package peers

import (
	"context"
	"time"

	gcache "github.com/go-redis/cache/v9"

	"github.com/asidekit/asidekit/benchmarks"
)

// localSize is the number of entries of go-redis/cache's TinyLFU: every key
// of the runs fits (its README's example uses 1000).
const localSize = 10_000

// goRedisSubject reads through go-redis/cache's Once (its README's
// "advanced usage"): msgpack with s2 compression above 64 bytes (the
// default), one load per key per process at a time. It has no null
// caching: an absent row is an error, which Once does not cache.
type goRedisSubject struct {
	c      *gcache.Cache
	prefix string
	ttl    time.Duration
	load   benchmarks.Loader
}

// newGoRedis builds a go-redis/cache Cache on the Setup's client, with the
// README's TinyLFU local cache when withLocal (TTL ttl, or min(TTL, 1 min)
// when ttl is 0).
func newGoRedis(s benchmarks.Setup, withLocal bool, ttl time.Duration) (benchmarks.Subject, error) {
	opt := &gcache.Options{Redis: s.Client}
	if withLocal {
		if ttl == 0 {
			ttl = localTTL(s.TTL)
		}
		opt.LocalCache = gcache.NewTinyLFU(localSize, ttl)
	}
	return &goRedisSubject{c: gcache.New(opt), prefix: s.Namespace + ":user:", ttl: s.TTL, load: s.Load}, nil
}

func (g *goRedisSubject) Get(ctx context.Context, id int64) (benchmarks.Value, error) {
	var v benchmarks.Value
	err := g.c.Once(&gcache.Item{
		Ctx:   ctx,
		Key:   g.prefix + itoa(id),
		Value: &v,
		TTL:   g.ttl,
		Do: func(*gcache.Item) (any, error) {
			return g.load(ctx, id)
		},
	})
	return v, err
}

// Delete deletes id's value with Cache.Delete: from Redis and from this
// process's TinyLFU (go-redis/cache tells no other process).
func (g *goRedisSubject) Delete(ctx context.Context, id int64) error {
	return g.c.Delete(ctx, g.prefix+itoa(id))
}

// CacheKey is id's key in Redis (and in the TinyLFU).
func (g *goRedisSubject) CacheKey(id int64) string { return g.prefix + itoa(id) }

// OutsideValue is v as go-redis/cache writes it to Redis: its exported
// Cache.Marshal (msgpack, s2-compressed above 64 bytes).
func (g *goRedisSubject) OutsideValue(v benchmarks.Value) ([]byte, error) { return g.c.Marshal(v) }
