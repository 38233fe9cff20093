package benchmarks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/testcontainers"
)

// Environment variables Open falls back to when Config names no server.
const (
	EnvPostgresDSN       = testcontainers.EnvPostgresDSN
	EnvRedisAddr         = testcontainers.EnvRedisAddr
	EnvRedisClusterAddrs = testcontainers.EnvRedisClusterAddrs
)

// ErrUnreachable is returned (wrapped, with the address and the cause) by
// Open when a named server does not answer.
var ErrUnreachable = errors.New("unreachable")

// Config names the backends of a run. The zero value runs on the embedded
// backend unless the environment names servers.
type Config struct {
	// RedisAddr is a standalone Redis server, host:port. Default: the
	// ASIDEKIT_REDIS_ADDR environment variable; if that is empty too (and no
	// cluster is named) an in-process miniredis.
	RedisAddr string
	// RedisCluster are seed addresses of a Redis Cluster. Default: the
	// comma-separated ASIDEKIT_REDIS_CLUSTER_ADDRS. Takes precedence over
	// RedisAddr when both are set.
	RedisCluster []string
	// PostgresDSN connects to a PostgreSQL server as a user that may create
	// databases: Open creates a fresh database for the run and Close drops
	// it. Default: ASIDEKIT_POSTGRES_DSN; if that is empty too, SQLite in a
	// temporary file.
	PostgresDSN string
	// Embedded ignores the fields above and the environment and runs on the
	// embedded backend. Default false.
	Embedded bool
	// DBPool is the most open connections to the database. Default 16.
	DBPool int
	// Progress, if set, is told how far each run has got. Default: none.
	Progress Progress
}

// Env is one run's backends, namespace and counters. Its methods are safe
// for concurrent use; scenarios run one after another on one Env.
type Env struct {
	// Backend describes the backends, e.g. "redis 127.0.0.1:6379 + postgresql".
	Backend string
	// EmbeddedRedis is true on miniredis, EmbeddedDB on SQLite.
	EmbeddedRedis, EmbeddedDB bool
	// Cluster is true on a Redis Cluster.
	Cluster bool
	// RedisAddrs are the server's address or the cluster's seeds.
	RedisAddrs []string
	// Namespace is unique to this run; every key a run writes starts with
	// it. Close removes those keys.
	Namespace string
	// DB is the run's database, with the sample schema migrated and the
	// counting callbacks installed.
	DB *gorm.DB

	progress Progress
	dbc      dbCounter
	rc       redisCounter
	admin    redis.UniversalClient // uncounted, for setup and cleanup

	mu      sync.Mutex // guards clients, closers and users
	clients []redis.UniversalClient
	closers []func() error
	users   int // users rows 1..users exist
}

// Open connects to (or starts) the backends cfg names, migrates the sample
// schema and returns the run's Env. A server that does not answer gives an
// error wrapping ErrUnreachable at once, not a stack of retries.
func Open(ctx context.Context, cfg Config) (*Env, error) {
	if !cfg.Embedded {
		if cfg.RedisAddr == "" {
			cfg.RedisAddr = os.Getenv(EnvRedisAddr)
		}
		if len(cfg.RedisCluster) == 0 {
			cfg.RedisCluster = splitList(os.Getenv(EnvRedisClusterAddrs))
		}
		if cfg.PostgresDSN == "" {
			cfg.PostgresDSN = os.Getenv(EnvPostgresDSN)
		}
	} else {
		cfg.RedisAddr, cfg.RedisCluster, cfg.PostgresDSN = "", nil, ""
	}
	if cfg.DBPool <= 0 {
		cfg.DBPool = 16
	}
	e := &Env{Namespace: "asidebench-" + randomHex(6), progress: cfg.Progress}
	ok := false
	defer func() {
		if !ok {
			_ = e.Close()
		}
	}()
	var parts []string
	if err := e.openRedis(ctx, cfg); err != nil {
		return nil, err
	}
	switch {
	case e.EmbeddedRedis:
		parts = append(parts, "miniredis (in-process)")
	case e.Cluster:
		parts = append(parts, "redis cluster "+strings.Join(e.RedisAddrs, ","))
	default:
		parts = append(parts, "redis "+e.RedisAddrs[0])
	}
	if err := e.openDB(ctx, cfg); err != nil {
		return nil, err
	}
	if e.EmbeddedDB {
		parts = append(parts, "sqlite (in-process)")
	} else {
		parts = append(parts, "postgresql")
	}
	e.Backend = strings.Join(parts, " + ")
	if err := e.dbc.register(e.DB); err != nil {
		return nil, fmt.Errorf("benchmarks: register GORM callbacks: %w", err)
	}
	if err := sample.Migrate(e.DB.WithContext(ctx)); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

// Embedded reports whether any part of the backend runs in-process, which
// makes latencies unrepresentative.
func (e *Env) Embedded() bool { return e.EmbeddedRedis || e.EmbeddedDB }

// NewClient returns a new Redis client of the run's server, as another
// process would have, with the round-trip counter installed. The Env closes
// it on Close.
func (e *Env) NewClient() redis.UniversalClient {
	return e.newClientAt(e.RedisAddrs)
}

func (e *Env) newClientAt(addrs []string) redis.UniversalClient {
	c := newClient(addrs, e.Cluster, e.EmbeddedRedis)
	c.AddHook(&e.rc)
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c
}

// newClient returns a client with short dial timeouts and one retry, and
// a pool kept warm (MinIdleConns, as cacheaside's docs recommend) so that
// the first burst of a run does not dial on the critical path. An
// in-process miniredis competes with the benchmark for the CPU and runs Lua
// slowly, so its clients wait longer for replies.
func newClient(addrs []string, cluster, embedded bool) redis.UniversalClient {
	rw, network := 5*time.Second, "tcp"
	if embedded {
		rw, network = 60*time.Second, "unix" // startMiniredis's socket
	}
	if cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:        addrs,
			Dialer:       dialer.DialContext,
			MaxRetries:   1,
			PoolSize:     64,
			MinIdleConns: minIdleConns,
			ReadTimeout:  rw,
			WriteTimeout: rw,
		})
	}
	return redis.NewClient(&redis.Options{
		Network:      network,
		Addr:         addrs[0],
		Dialer:       dialer.DialContext,
		MaxRetries:   1,
		PoolSize:     64,
		MinIdleConns: minIdleConns,
		ReadTimeout:  rw,
		WriteTimeout: rw,
	})
}

// minIdleConns is the warm part of every benchmark client's pool.
const minIdleConns = 8

// Counts is a snapshot of the run's counters.
type Counts struct {
	// DBStatements is the number of SQL statements started so far.
	DBStatements int64
	// RedisRoundTrips is the number of commands and pipelines sent by the
	// clients NewClient returned.
	RedisRoundTrips int64
}

// Counts returns the counters' current values.
func (e *Env) Counts() Counts {
	return Counts{DBStatements: e.dbc.statements.Load(), RedisRoundTrips: e.rc.roundTrips.Load()}
}

// Sub returns Namespace + "-" + name: a namespace of its own for one
// variant, removed with the run's keys.
func (e *Env) Sub(name string) string { return e.Namespace + "-" + name }

// Close closes every client, removes the run's Redis keys (on a real
// server; an embedded one is stopped with its keys), drops the run's
// database (PostgreSQL) or file (SQLite) and stops embedded servers.
func (e *Env) Close() error {
	e.mu.Lock()
	clients := e.clients
	e.clients = nil
	closers := e.closers
	e.closers = nil
	e.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
	}
	var errs []error
	// On miniredis the keys go with the server, which a closer stops below:
	// deleting them first would only cost time (miniredis answers a SCAN
	// with every matching key at once, sorted, then takes one UNLINK per
	// key under its global lock, and a demo leaves tens of thousands).
	if e.admin != nil && !e.EmbeddedRedis {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := testcontainers.DeleteNamespace(ctx, e.admin, e.Namespace); err != nil {
			errs = append(errs, fmt.Errorf("benchmarks: delete keys %s*: %w", e.Namespace, err))
		}
		cancel()
	}
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (e *Env) onClose(f func() error) {
	e.mu.Lock()
	e.closers = append(e.closers, f)
	e.mu.Unlock()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}
