package chaos

import (
	"sync"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Settings the workloads share.
const (
	lockName   = "chaos"
	lockTTL    = 400 * time.Millisecond
	limitKey   = "chaos"
	limitN     = 10
	limitW     = 200 * time.Millisecond
	serialBiz  = "CHS"
	serialSize = 8 // counter digits
	opTimeout  = 4 * time.Second
)

// process is one simulated service process: its own clients, cache,
// repositories, locker, limiter and generator, each behind its proxies.
type process struct {
	id                       int
	cacheLink, guardLink, pg *faultproxy.Proxy
	cacheRDB, guardRDB       *redis.Client
	db                       *gorm.DB
	cache                    *cacheaside.Cache
	items, hot               []*repo.Repository[Item, int64] // by strategy
	locker                   *lock.Locker
	limiter                  limit.Limiter
	gen                      *seqgen.Generator
	loads                    *loadCounter
}

// policy is the Policy of the entities of strategy s.
func policy(s cacheaside.Strategy) cacheaside.Policy {
	return cacheaside.Policy{
		TTL:         10 * time.Minute, // longer than a run: a stale entry stays until fixed
		Strategy:    s,
		WaitTimeout: 2 * time.Second,
	}
}

// filterOptions sizes the Bloom filters of the main run's repositories:
// one over ids, one over slugs (GetBy), each rebuilt by the repository
// from the table whenever it finds its keys lost (the cache Redis
// restarted empty), at most once a second per process.
func filterOptions(ns string) *bloom.Options {
	return &bloom.Options{Namespace: ns, Capacity: 10_000, FalsePositiveRate: 0.01, RebuildInterval: time.Second}
}

func redisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:         addr,
		DialTimeout:  500 * time.Millisecond,
		ReadTimeout:  500 * time.Millisecond,
		WriteTimeout: 500 * time.Millisecond,
		PoolSize:     16,
		MaxRetries:   1,
	})
}

func openDB(dsn string, conns int) (*gorm.DB, error) {
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Discard, TranslateError: true})
	if err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	sqlDB.SetConnMaxLifetime(time.Minute)
	return db, nil
}

func newProcess(id int, e *env) (p *process, err error) {
	p = &process{id: id, loads: newLoadCounter()}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.cacheLink, err = faultproxy.New(e.cacheRedis.Addr); err != nil {
		return nil, err
	}
	if p.guardLink, err = faultproxy.New(e.guardRedis.Addr); err != nil {
		return nil, err
	}
	if p.pg, err = faultproxy.New(e.pgAddr); err != nil {
		return nil, err
	}
	p.cacheRDB, p.guardRDB = redisClient(p.cacheLink.Addr()), redisClient(p.guardLink.Addr())
	if p.db, err = openDB(e.dsnVia(p.pg.Addr()), 6); err != nil {
		return nil, err
	}
	if p.cache, err = cacheaside.New(p.cacheRDB, &cacheaside.Options{Namespace: e.ns, Observer: p.loads}); err != nil {
		return nil, err
	}
	for si, s := range strategies {
		// Every other strategy's items write through (a write stores its
		// row): the reads check covers both upkeeps under the faults.
		r, err := repo.New[Item, int64](p.db, p.cache, &repo.Options{Name: entityName("items", s), Policy: policy(s),
			Filter: filterOptions(e.ns), AfterCommitErrors: true, WriteThrough: si%2 == 1})
		if err != nil {
			return nil, err
		}
		p.items = append(p.items, r)
		h, err := repo.New[Item, int64](p.db, p.cache, &repo.Options{Name: entityName("hot", s), Policy: policy(s),
			Filter: filterOptions(e.ns), AfterCommitErrors: true})
		if err != nil {
			return nil, err
		}
		p.hot = append(p.hot, h)
	}
	if p.locker, err = lock.New(p.guardRDB, &lock.Options{Namespace: e.ns}); err != nil {
		return nil, err
	}
	if p.limiter, err = limit.NewSlidingLog(p.guardRDB, limit.SlidingLog{Limit: limitN, Window: limitW}, &limit.Options{Namespace: e.ns}); err != nil {
		return nil, err
	}
	p.gen, err = seqgen.New(p.cacheRDB, p.db, &seqgen.Options{
		Namespace: e.ns, Width: serialSize, Segment: 50, Location: time.UTC,
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// repos returns the process's repositories of Item: by strategy, the
// workload's, then the hot rows'.
func (p *process) repos() []*repo.Repository[Item, int64] {
	return append(append([]*repo.Repository[Item, int64](nil), p.items...), p.hot...)
}

// link returns the proxy of l.
func (p *process) link(l Link) *faultproxy.Proxy {
	switch l {
	case LinkGuard:
		return p.guardLink
	case LinkPG:
		return p.pg
	}
	return p.cacheLink
}

func (p *process) heal() {
	for _, l := range []*faultproxy.Proxy{p.cacheLink, p.guardLink, p.pg} {
		if l != nil {
			l.Heal()
		}
	}
}

// close tears the process down. Errors are dropped: the servers are
// going away too, and the run's result is already recorded.
func (p *process) close() {
	for _, r := range p.repos() {
		_ = r.Close() // stops the filters' background rebuilds
	}
	if p.gen != nil {
		_ = p.gen.Close()
	}
	if p.locker != nil {
		_ = p.locker.Close()
	}
	if p.cache != nil {
		_ = p.cache.Close()
	}
	if p.db != nil {
		if sqlDB, err := p.db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
	for _, c := range []*redis.Client{p.cacheRDB, p.guardRDB} {
		if c != nil {
			_ = c.Close()
		}
	}
	for _, l := range []*faultproxy.Proxy{p.cacheLink, p.guardLink, p.pg} {
		if l != nil {
			_ = l.Close()
		}
	}
}

// loadCounter is a cacheaside.Observer counting loader calls per entity,
// and the events that explain a load beyond a strategy's one (why).
type loadCounter struct {
	mu  sync.Mutex // guards n and why
	n   map[string]int
	why map[string]counts
}

func newLoadCounter() *loadCounter {
	return &loadCounter{n: map[string]int{}, why: map[string]counts{}}
}

// OnEvent counts EventLoad and EventLoadError as loads, and the events
// after which a reader loads on its own: a skipped Redis (EventBypass), a
// Redis call that failed (EventCacheError: the reader loads uncached), a
// wait for another's rebuild that timed out, a lease that lapsed, a
// failed load (EventLoadError: its holder gives the lease up and a waiter
// loads again, see cacheaside's TestGetMany_holderFails_everyLeasingStrategy;
// after faults, a pooled connection they broke fails the first load), and
// refreshes ahead of the expiry (AsyncRefresh, EarlyRefresh), stores
// refused after an invalidation and background invalidation retries.
func (c *loadCounter) OnEvent(entity string, ev cacheaside.Event, _ time.Duration) {
	switch ev {
	case cacheaside.EventLoad, cacheaside.EventLoadError:
		c.mu.Lock()
		c.n[entity]++
		if ev == cacheaside.EventLoadError {
			if c.why[entity] == nil {
				c.why[entity] = counts{}
			}
			c.why[entity][ev.String()]++
		}
		c.mu.Unlock()
	case cacheaside.EventBypass, cacheaside.EventCacheError, cacheaside.EventLockTimeout, cacheaside.EventLeaseLost, cacheaside.EventRefresh,
		cacheaside.EventRejectedSet, cacheaside.EventInvalidationRetry:
		c.mu.Lock()
		if c.why[entity] == nil {
			c.why[entity] = counts{}
		}
		c.why[entity][ev.String()]++
		c.mu.Unlock()
	}
}

func (c *loadCounter) get(entity string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[entity]
}

// reasons returns a copy of the events of entity that explain loads.
func (c *loadCounter) reasons(entity string) counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := counts{}
	for k, v := range c.why[entity] {
		out[k] = v
	}
	return out
}
