package repo_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// env is one test's backends: a fresh PostgreSQL database with the sample
// schema, a Redis namespace, a Cache on it, and counters of both.
type env struct {
	db    *gorm.DB
	dsn   string // PostgreSQL only
	rdb   redis.UniversalClient
	ns    string
	cache *cacheaside.Cache
	sql   *testkit.SQLCounter
	cmds  *cmdCounter
}

func newEnv(t *testing.T) *env {
	t.Helper()
	pg := testcontainers.Postgres(t)
	if err := sample.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	rn := testcontainers.Redis(t)
	e := newEnvOn(t, pg.DB, rn.Client, rn.Namespace)
	e.dsn = pg.DSN
	return e
}

func newEnvOn(t *testing.T, db *gorm.DB, rdb redis.UniversalClient, ns string) *env {
	t.Helper()
	cache, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	e := &env{db: db, rdb: rdb, ns: ns, cache: cache, sql: testkit.CountSQL(t, db), cmds: &cmdCounter{}}
	rdb.AddHook(e.cmds)
	return e
}

// filterOptions sizes a test's Bloom filters in its namespace.
func (e *env) filterOptions(capacity int64) *bloom.Options {
	return &bloom.Options{Namespace: e.ns, Capacity: capacity, FalsePositiveRate: 0.01}
}

func (e *env) users(t *testing.T, o repo.Options) *repo.Repository[sample.User, int64] {
	t.Helper()
	if o.Filter != nil {
		o.FilterClient = e.rdb
	}
	r, err := repo.New[sample.User, int64](e.db, e.cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	warm(t, r, o)
	return r
}

func (e *env) listings(t *testing.T, o repo.Options) *repo.Repository[sample.Listing, int64] {
	t.Helper()
	if o.Filter != nil {
		o.FilterClient = e.rdb
	}
	r, err := repo.New[sample.Listing, int64](e.db, e.cache, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	warm(t, r, o)
	return r
}

// warm makes a new repository's filters complete, as a service does
// before it listens: a filter not known complete answers "maybe" (SQL for
// every absent id) and rebuilds itself in the background, which would
// add Redis commands and SQL to what a test counts.
func warm(t *testing.T, r interface{ WarmFilter(context.Context) error }, o repo.Options) {
	t.Helper()
	if o.Filter == nil {
		return
	}
	if err := r.WarmFilter(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// reset zeroes both counters.
func (e *env) reset() {
	e.sql.Reset()
	e.cmds.reset()
}

// cmdCounter is a go-redis hook that records every command sent, pipelined
// or not.
type cmdCounter struct {
	mu      sync.Mutex
	cmds    [][]string // name, then the other arguments as text
	trips   int        // round trips: single commands and pipelines
	tripLog []string
	// tripCmds are the command names of each round trip, lower case.
	tripCmds [][]string
}

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// epochLearning reports whether cmds are a Cache's learning of its epoch
// marker (the settle window's), which New starts in the background: not
// the test's commands, and on a busy machine sent after the counter was
// installed.
func epochLearning(cmds ...redis.Cmder) bool {
	for _, cmd := range cmds {
		args := cmd.Args()
		key, _ := args[min(1, len(args)-1)].(string)
		if n := cmd.Name(); (n != "set" && n != "get") || !strings.HasSuffix(key, ":epoch") {
			return false
		}
	}
	return len(cmds) > 0
}

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if epochLearning(cmd) {
			return next(ctx, cmd)
		}
		if !handshake(cmd) {
			c.trip(cmd.Name(), cmd)
		}
		c.add(cmd)
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if epochLearning(cmds...) {
			return next(ctx, cmds)
		}
		if !slices.ContainsFunc(cmds, handshake) {
			c.trip(fmt.Sprintf("pipeline of %d", len(cmds)), cmds...)
		}
		for _, cmd := range cmds {
			c.add(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *cmdCounter) add(cmd redis.Cmder) {
	args := make([]string, 0, len(cmd.Args()))
	for _, a := range cmd.Args() {
		s, ok := a.(string)
		if !ok {
			continue // keys are strings; other arguments do not matter here
		}
		args = append(args, s)
	}
	if len(args) > 0 {
		args[0] = strings.ToLower(args[0])
	}
	c.mu.Lock()
	c.cmds = append(c.cmds, args)
	c.mu.Unlock()
}

// handshake reports whether cmd is part of setting up a new connection,
// which depends on the pool, not on the work being measured.
func handshake(cmd redis.Cmder) bool {
	switch strings.ToLower(cmd.Name()) {
	case "hello", "client", "auth", "select", "ping":
		return true
	}
	return false
}

func (c *cmdCounter) trip(what string, cmds ...redis.Cmder) {
	names := make([]string, len(cmds))
	for i, cmd := range cmds {
		names[i] = strings.ToLower(cmd.Name())
	}
	c.mu.Lock()
	c.tripLog = append(c.tripLog, what)
	c.tripCmds = append(c.tripCmds, names)
	c.trips++
	c.mu.Unlock()
}

// roundTrips returns how many single commands and pipelines were sent.
func (c *cmdCounter) roundTrips() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trips
}

func (c *cmdCounter) reset() {
	c.mu.Lock()
	c.trips = 0
	c.tripLog = nil
	c.tripCmds = nil
	c.cmds = nil
	c.mu.Unlock()
}

// count returns how many commands named name (lower case; "" for all) ran.
func (c *cmdCounter) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cmd := range c.cmds {
		if len(cmd) > 0 && (name == "" || cmd[0] == name) {
			n++
		}
	}
	return n
}

// touching returns how many commands had key among their arguments.
func (c *cmdCounter) touching(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cmd := range c.cmds {
		for _, a := range cmd[1:] {
			if a == key {
				n++
				break
			}
		}
	}
	return n
}

// redisServer is a private redis-server with a client on it.
type redisServer struct {
	*testcontainers.RedisServer
	client redis.UniversalClient
}

func testcontainersRedisServer(t *testing.T) redisServer {
	t.Helper()
	s := testcontainers.NewRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return redisServer{RedisServer: s, client: c}
}

func newCacheOn(t testing.TB, rdb redis.UniversalClient, ns string) *cacheaside.Cache {
	t.Helper()
	cache, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	return cache
}
