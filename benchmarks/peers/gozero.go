package peers

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stat"
	zcache "github.com/zeromicro/go-zero/core/stores/cache"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/core/syncx"

	"github.com/asidekit/asidekit/benchmarks"
)

func init() {
	// go-zero logs to stdout by default (slow calls, failed sets, and a
	// stats line a minute), which would interleave with the tables. Its
	// errors still reach the harness through TakeCtx's return value.
	logx.Disable()
	stat.DisableLog()
}

// goZeroSeq numbers go-zero's Redis handles: see newGoZeroRedis.
var goZeroSeq atomic.Int64

// goZeroSubject reads through go-zero's cache.Cache as go-zero's generated
// model code does (sqlc.CachedConn.QueryRowCtx): TakeCtx with the row query.
type goZeroSubject struct {
	c      zcache.Cache
	prefix string
	load   benchmarks.Loader
}

// newGoZero builds a go-zero cache node: one singleflight barrier per
// process, Expiry = the scenario's TTL (go-zero adds its fixed ±5% and
// rounds up to whole seconds), NotFoundExpiry = nullTTL (0 keeps go-zero's
// default, one minute).
func newGoZero(s benchmarks.Setup, nullTTL time.Duration) (benchmarks.Subject, error) {
	rds, err := newGoZeroRedis(s)
	if err != nil {
		return nil, err
	}
	opts := []zcache.Option{zcache.WithExpiry(s.TTL)}
	if nullTTL > 0 {
		opts = append(opts, zcache.WithNotFoundExpiry(nullTTL))
	}
	c := zcache.NewNode(rds, syncx.NewSingleFlight(), zcache.NewStat(s.Namespace), benchmarks.ErrNotFound, opts...)
	return &goZeroSubject{c: c, prefix: s.Namespace + ":user:", load: s.Load}, nil
}

func (g *goZeroSubject) Get(ctx context.Context, id int64) (benchmarks.Value, error) {
	var v benchmarks.Value
	err := g.c.TakeCtx(ctx, &v, g.prefix+itoa(id), func(val any) error {
		u, err := g.load(ctx, id)
		if err != nil {
			return err // benchmarks.ErrNotFound is go-zero's errNotFound: it caches "*"
		}
		*val.(*benchmarks.Value) = u
		return nil
	})
	return v, err
}

// Delete deletes id's value with DelCtx, the call go-zero's generated
// models make after a write (sqlc.CachedConn.ExecCtx). DelCtx returns nil
// whatever happened to the DEL (it logs a failure and queues a retry), so
// an error here never comes from Redis.
func (g *goZeroSubject) Delete(ctx context.Context, id int64) error {
	return g.c.DelCtx(ctx, g.prefix+itoa(id))
}

// newGoZeroRedis returns a go-zero *redis.Redis whose commands run on the
// Setup's own client. go-zero builds its go-redis clients itself, one per
// address for the whole process (10·GOMAXPROCS connections, three retries),
// and offers no way to pass one in; it does take hooks. The forwarding hook
// sits innermost, under go-zero's own duration and breaker hooks, and sends
// each command through s.Client: every simulated process keeps a client of
// its own with the same settings as every other variant's, and the
// harness counts go-zero's round trips like everyone else's. The address
// go-zero keys its client by is made unique per Subject so that two
// simulated processes never share a hook; the pool go-zero builds behind it
// is never used for commands (only its idle connections are dialled, to
// the real server).
func newGoZeroRedis(s benchmarks.Setup) (*zredis.Redis, error) {
	if len(s.Env.RedisAddrs) == 0 {
		return nil, fmt.Errorf("go-zero: the run has no Redis address")
	}
	if s.Env.Cluster {
		return nil, fmt.Errorf("go-zero: Redis Cluster is not supported by this comparison")
	}
	addr := s.Env.RedisAddrs[0]
	host := fmt.Sprintf("%s#%s#%d", addr, s.Namespace, goZeroSeq.Add(1))
	return zredis.NewRedis(zredis.RedisConf{Host: host, Type: zredis.NodeType, NonBlock: true},
		zredis.WithHook(forwardHook{to: s.Client, addr: addr}))
}

// forwardHook runs every command of the client it is installed on through
// another client instead.
type forwardHook struct {
	to   redis.UniversalClient
	addr string // where dials go
}

func (h forwardHook) DialHook(redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, h.addr)
	}
}

func (h forwardHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.to.Process(ctx, cmd)
	}
}

func (h forwardHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		_, err := h.to.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, c := range cmds {
				_ = p.Process(ctx, c)
			}
			return nil
		})
		return err
	}
}
