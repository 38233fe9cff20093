package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/cacheaside"
)

// dialTimeout bounds the first contact with each server: a command against
// a server that does not answer fails within about this long.
const dialTimeout = 3 * time.Second

// quiet drops go-redis's own log lines: errors reach the user once, as
// the command's one-line error.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quiet{}) }

// backends are the connections of one run, opened when first needed.
type backends struct {
	cfg      *Config
	db       *gorm.DB
	rdb      redis.UniversalClient
	answered bool // rdb answered a PING
	cache    *cacheaside.Cache
}

// DB returns the database, connecting (and checking it answers) first.
func (b *backends) DB(ctx context.Context) (*gorm.DB, error) {
	if b.db != nil {
		return b.db, nil
	}
	if b.cfg.DSN == "" {
		return nil, usageErr("the config names no dsn")
	}
	if _, err := pgx.ParseConfig(b.cfg.DSN); err != nil {
		return nil, usageErr("bad dsn: %v", err)
	}
	// The simple protocol sends arguments as literals, which PostgreSQL
	// casts to the column's type: an id given as text on the command line
	// compares with a bigint, uuid or text key alike, and a malformed one
	// is PostgreSQL's "invalid input syntax".
	db, err := gorm.Open(postgres.New(postgres.Config{DSN: b.cfg.DSN, PreferSimpleProtocol: true}),
		&gorm.Config{Logger: logger.Discard, DisableAutomaticPing: true})
	if err != nil {
		return nil, unreachable("PostgreSQL", err)
	}
	// The first connection is made here, within dialTimeout.
	cctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if err := db.WithContext(cctx).Exec("SELECT 1").Error; err != nil {
		if sql, _ := db.DB(); sql != nil {
			sql.Close()
		}
		return nil, unreachable("PostgreSQL", err)
	}
	b.db = db
	return db, nil
}

// client returns the Redis client, made once; it connects when first
// used.
func (b *backends) client() (redis.UniversalClient, error) {
	if b.rdb != nil {
		return b.rdb, nil
	}
	addrs := b.cfg.RedisCluster
	if len(addrs) == 0 {
		if b.cfg.Redis == "" {
			return nil, usageErr("the config names no redis or redis_cluster")
		}
		addrs = []string{b.cfg.Redis}
	}
	b.rdb = redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:         addrs,
		IsClusterMode: len(b.cfg.RedisCluster) > 0,
		Username:      b.cfg.RedisUsername,
		Password:      b.cfg.RedisPassword,
		DialTimeout:   dialTimeout,
		ReadTimeout:   5 * time.Second,
		WriteTimeout:  5 * time.Second,
		MaxRetries:    1,
	})
	return b.rdb, nil
}

// Redis returns the Redis client, checking first (once) that Redis
// answers.
func (b *backends) Redis(ctx context.Context) (redis.UniversalClient, error) {
	c, err := b.client()
	if err != nil || b.answered {
		return c, err
	}
	cctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if err := c.Ping(cctx).Err(); err != nil {
		return nil, unreachable("Redis", err)
	}
	b.answered = true
	return c, nil
}

// cacheOf returns the Cache, over Redis, made once. With check, it
// checks first that Redis answers; without, it names keys (Entity.Key)
// without contacting Redis.
func (b *backends) cacheOf(ctx context.Context, check bool) (*cacheaside.Cache, error) {
	rdb, err := b.client()
	if err == nil && check {
		_, err = b.Redis(ctx)
	}
	if err != nil || b.cache != nil {
		return b.cache, err
	}
	// No breaker: an operator's command reports each Redis error as it is.
	c, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: b.cfg.Namespace, BreakerThreshold: -1})
	if err != nil {
		return nil, usageErr("namespace %q: %v", b.cfg.Namespace, err)
	}
	b.cache = c
	return c, nil
}

// entity returns the cacheaside entity name of e (the rows', or a
// mapping's), typed as raw values: the CLI has no Go types. It checks
// first that Redis answers.
func (b *backends) entity(ctx context.Context, e *EntityConfig, name string) (*cacheaside.Entity[json.RawMessage], error) {
	return b.entityOf(ctx, e, name, true)
}

// entityOf is entity; without check, Redis is not contacted (the entity
// names keys).
func (b *backends) entityOf(ctx context.Context, e *EntityConfig, name string, check bool) (*cacheaside.Entity[json.RawMessage], error) {
	c, err := b.cacheOf(ctx, check)
	if err != nil {
		return nil, err
	}
	ent, err := cacheaside.NewEntity[json.RawMessage](c, name, cacheaside.Policy{})
	if err != nil {
		return nil, usageErr("entity %q: %v", name, err)
	}
	return ent, nil
}

// close closes what was opened.
func (b *backends) close() {
	if b.cache != nil {
		b.cache.Close()
	}
	if b.rdb != nil {
		b.rdb.Close()
	}
	if b.db != nil {
		if sql, _ := b.db.DB(); sql != nil {
			sql.Close()
		}
	}
}

// payloadJSON returns a cached payload (Peeked.Value) as JSON, checking
// that it is.
func payloadJSON(codec string, payload []byte) (json.RawMessage, error) {
	if !json.Valid(payload) {
		return nil, fmt.Errorf("cached payload is not JSON (the entity's codec is %q)", codec)
	}
	return payload, nil
}
