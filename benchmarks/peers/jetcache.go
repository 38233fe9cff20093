package peers

import (
	"context"
	"fmt"
	"time"

	jetcache "github.com/mgtv-tech/jetcache-go"
	"github.com/mgtv-tech/jetcache-go/local"
	jetlog "github.com/mgtv-tech/jetcache-go/logger"
	"github.com/mgtv-tech/jetcache-go/remote"

	"github.com/asidekit/asidekit/benchmarks"
)

func init() {
	// jetcache-go logs its statistics every minute at Info level; keep the
	// output to the tables. Errors are still logged.
	jetlog.SetLevel(jetlog.LevelError)
}

// jetLocalSize is the size of jetcache-go's FreeCache. FreeCache is one
// cache for the whole process, sized by the first caller; each Subject uses
// a key prefix of its own in it, which makes it a local cache per
// simulated process. 64 MB holds every value of the runs (the README's
// example asks for 256 MB).
const jetLocalSize = 64 * local.MB

// jetOptions configure one jetcache-go variant.
type jetOptions struct {
	local   bool          // add the FreeCache local cache
	nullTTL time.Duration // notFoundExpiry; 0 keeps the default (1 minute)
	refresh bool          // Once with Refresh(true): the breakdown protection
	// localTTL is the FreeCache entries' lifetime; 0 is min(TTL, 1 min).
	localTTL time.Duration
}

// jetSubject reads through jetcache-go's Once (the call under its typed
// wrapper T.Get), with the Setup's loader as the Do function.
type jetSubject struct {
	c       jetcache.Cache
	prefix  string
	ttl     time.Duration
	refresh bool
	load    benchmarks.Loader
}

// newJet builds a jetcache-go cache the way its README does: go-redis v9
// adapter as remote, optionally FreeCache as local (TTL min(TTL, 1 min),
// the README's one minute capped at the scenario's lifetime), msgpack (the
// default codec), errNotFound set so that absent rows are cached as a
// placeholder. With o.refresh, the auto-refresh of its docs ("to prevent
// cascading failures when caches expire") runs every refreshInterval(TTL):
// one process at a time reloads the key under a Redis SETNX lock.
func newJet(s benchmarks.Setup, o jetOptions) (benchmarks.Subject, error) {
	opts := []jetcache.Option{
		jetcache.WithName(s.Namespace),
		jetcache.WithRemote(remote.NewGoRedisV9Adapter(s.Client)),
		jetcache.WithErrNotFound(benchmarks.ErrNotFound),
		jetcache.WithRemoteExpiry(s.TTL),
	}
	if o.local {
		ttl := o.localTTL
		if ttl == 0 {
			ttl = localTTL(s.TTL)
		}
		opts = append(opts, jetcache.WithLocal(local.NewFreeCache(jetLocalSize, ttl, s.Namespace+"/"+itoa(int64(s.Instance)))))
	}
	if o.nullTTL > 0 {
		opts = append(opts, jetcache.WithNotFoundExpiry(o.nullTTL))
	}
	if o.refresh {
		opts = append(opts, jetcache.WithRefreshDuration(refreshInterval(s.TTL)))
	}
	return &jetSubject{
		c:       jetcache.New(opts...),
		prefix:  s.Namespace + ":user:",
		ttl:     s.TTL,
		refresh: o.refresh,
		load:    s.Load,
	}, nil
}

func (j *jetSubject) Get(ctx context.Context, id int64) (benchmarks.Value, error) {
	var v benchmarks.Value
	err := j.c.Once(ctx, j.prefix+itoa(id),
		jetcache.Value(&v),
		jetcache.TTL(j.ttl),
		jetcache.Refresh(j.refresh),
		jetcache.Do(func(ctx context.Context) (any, error) {
			return j.load(ctx, id)
		}))
	return v, err
}

// Delete deletes id's value with the cache's Delete: from Redis and from
// this process's FreeCache (the other processes' are told only with
// WithSyncLocal and an event handler the user writes; not here).
func (j *jetSubject) Delete(ctx context.Context, id int64) error {
	return j.c.Delete(ctx, j.prefix+itoa(id))
}

// CacheKey is id's key in Redis (and in FreeCache).
func (j *jetSubject) CacheKey(id int64) string { return j.prefix + itoa(id) }

// OutsideValue is v as jetcache-go writes it to Redis: its cache's own
// Marshal (the configured codec, msgpack by default), a method of the
// cache New returns though not of the Cache interface.
func (j *jetSubject) OutsideValue(v benchmarks.Value) ([]byte, error) {
	m, ok := j.c.(interface{ Marshal(any) ([]byte, error) })
	if !ok {
		return nil, fmt.Errorf("jetcache-go's cache (%T) has no Marshal", j.c)
	}
	return m.Marshal(v)
}

// Close stops the refresh ticker.
func (j *jetSubject) Close() error {
	j.c.Close()
	return nil
}

// refreshInterval is jetcache-go's refreshDuration for a value that lives
// ttl: two thirds of it in whole seconds, at least one second (jetcache-go's
// minimum). Above ttl/2, so that the harness sees each refresh as a burst of
// its own; below ttl, so that the key never expires while it is read.
func refreshInterval(ttl time.Duration) time.Duration {
	return max(time.Second, (2 * ttl / 3).Truncate(time.Second))
}
