package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
)

// Config is the service's configuration (the command's flags).
type Config struct {
	Addr        string
	RedisAddr   string // empty: miniredis
	PostgresDSN string // empty: SQLite
	Namespace   string
	Seed        int
	PerIPRate   int
	PerIPPeriod time.Duration // what PerIPRate counts over; 0 means a second
	PerIPBurst  int
}

// Product is a catalogue entry: a string id and a unique slug.
type Product struct {
	ID         string    `gorm:"primaryKey;size:64" json:"id"`
	Slug       string    `gorm:"size:200;not null;uniqueIndex" json:"slug"`
	Name       string    `gorm:"size:200;not null" json:"name"`
	PriceCents int64     `gorm:"not null" json:"price_cents"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// Order is a purchase, numbered for people by seqgen.
type Order struct {
	ID        int64     `gorm:"primaryKey" json:"id"`
	Serial    string    `gorm:"size:64;not null;uniqueIndex" json:"serial"`
	ProductID string    `gorm:"size:64;not null;index" json:"product_id"`
	Quantity  int       `gorm:"not null" json:"quantity"`
	CreatedAt time.Time `json:"created_at"`
}

// Service is the catalogue: its backends and the asidekit parts over them.
type Service struct {
	backend  string
	db       *gorm.DB
	rdb      *redis.Client
	cache    *cacheaside.Cache
	products *repo.Repository[Product, string]
	orders   *seqgen.Generator
	limiter  limit.Limiter
	registry *prometheus.Registry
	closers  []func() error // in reverse order
}

// Open connects to the backends (starting the embedded ones when cfg names
// none), creates the tables, seeds the products and warms the filters.
func Open(ctx context.Context, cfg Config) (svc *Service, err error) {
	s := &Service{registry: prometheus.NewRegistry()}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if err := s.openBackends(cfg); err != nil {
		return nil, err
	}
	if err := s.db.AutoMigrate(&schema.SeqSegment{}, &Product{}, &Order{}); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}

	// The namespace is said once, in the Kit: the cache, the filters, the
	// generator and the limiter are all built in it, and the repository
	// claims "products" in it (a second service on the same namespace
	// with another database's products table fails to start).
	obs, err := metrics.NewCacheObserver(nil)
	if err != nil {
		return nil, err
	}
	kit, err := asidekit.New(asidekit.Config{Namespace: cfg.Namespace, Redis: s.rdb, DB: s.db,
		Cache: &cacheaside.Options{Observer: obs}})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, kit.Close)
	s.cache = kit.Cache()
	// A filter sized for a million products (1.2 MB of bits). miniredis
	// copies a key's whole string on every SETBIT, so the embedded backend
	// gets one sized for what it holds: a demo's few thousand.
	capacity := int64(1_000_000)
	if cfg.RedisAddr == "" {
		capacity = 10_000
	}
	s.products, err = repo.New[Product, string](s.db, kit.Cache(), &repo.Options{
		Policy: cacheaside.Policy{TTL: 10 * time.Minute, Strategy: cacheaside.Mutex},
		Filter: kit.FilterOptions(&bloom.Options{Capacity: capacity, FalsePositiveRate: 0.01}),
	})
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, s.products.Close)
	// Redis calls are bounded by the packages' own deadlines (250 ms and
	// less), which an in-process miniredis on a busy machine can pass: it
	// runs every script in a fresh Lua VM under one lock. Embedded, they
	// wait as long as it takes.
	sopts, lopts := &seqgen.Options{Location: time.UTC}, &limit.Options{}
	if cfg.RedisAddr == "" {
		sopts.RedisTimeout, lopts.Timeout = time.Minute, -1
	}
	if s.orders, err = kit.Generator(sopts); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, s.orders.Close)
	// The Kit's default: while Redis is down the limiter limits in this
	// process (each process at the whole limit, Config.Processes being 1),
	// so an outage serves every request within the limit instead of 503.
	rate := limit.PerSecond(cfg.PerIPRate)
	if cfg.PerIPPeriod > 0 {
		rate.Period = cfg.PerIPPeriod
	}
	s.limiter, err = limit.NewTokenBucket(s.rdb, limit.TokenBucket{Rate: rate, Burst: cfg.PerIPBurst},
		kit.LimitOptions(lopts))
	if err != nil {
		return nil, err
	}
	s.registry.MustRegister(obs,
		metrics.NewBloomCollector("products", s.products.Filter()),
		metrics.NewBloomCollector("products.by.slug", s.products.FilterBy("slug")),
		metrics.NewLimitCollector("per-ip", s.limiter),
		metrics.NewSeqgenCollector("orders", s.orders),
		metrics.NewAfterCommitCollector(nil),
	)
	if err := s.seed(ctx, cfg.Seed); err != nil {
		return nil, err
	}
	return s, nil
}

// openBackends opens Redis and the database, embedded or real.
func (s *Service) openBackends(cfg Config) error {
	addr, redisName := cfg.RedisAddr, "redis "+cfg.RedisAddr
	// Timeouts that let no stalled Redis stall a request (see
	// asidekit.RecommendedTimeout).
	ropts := &redis.Options{Addr: addr, DialTimeout: asidekit.RecommendedTimeout, ReadTimeout: asidekit.RecommendedTimeout,
		WriteTimeout: asidekit.RecommendedTimeout, ContextTimeoutEnabled: true, MinIdleConns: 4}
	if addr == "" {
		mr := miniredis.NewMiniRedis()
		if err := mr.StartAddr("127.0.0.1:0"); err != nil {
			return fmt.Errorf("miniredis: %w", err)
		}
		mr.ClockTTL(true) // TTLs run down with the wall clock, as on a server
		s.closers = append(s.closers, func() error { mr.Close(); return nil })
		addr, redisName = mr.Addr(), "miniredis"
		// miniredis runs each script in a fresh Lua VM under one lock: a
		// filter warm-up's pipeline of scripts can take seconds on a busy
		// machine. The server is in-process, so a read timeout guards
		// against nothing here.
		ropts = &redis.Options{Addr: addr, ReadTimeout: -1, WriteTimeout: -1}
	}
	s.rdb = redis.NewClient(ropts)
	s.closers = append(s.closers, s.rdb.Close)

	// TranslateError makes a duplicate key match gorm.ErrDuplicatedKey.
	gcfg := &gorm.Config{Logger: logger.Default.LogMode(logger.Silent), TranslateError: true}
	dbName := "postgres"
	var dial gorm.Dialector
	if cfg.PostgresDSN != "" {
		dial = postgres.Open(cfg.PostgresDSN)
	} else {
		dir, err := os.MkdirTemp("", "catalog-")
		if err != nil {
			return err
		}
		s.closers = append(s.closers, func() error { return os.RemoveAll(dir) })
		dial = sqlite.Open("file:" + filepath.Join(dir, "catalog.db") + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
		dbName = "SQLite"
	}
	db, err := gorm.Open(dial, gcfg)
	if err != nil {
		return err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	s.closers = append(s.closers, sqlDB.Close)
	s.db, s.backend = db, redisName+" + "+dbName
	return nil
}

// seed creates n products in one CreateMany when the table is empty, and
// otherwise fills the Bloom filters from the table.
func (s *Service) seed(ctx context.Context, n int) error {
	var count int64
	if err := s.products.DB(ctx).Count(&count).Error; err != nil {
		return err
	}
	if count > 0 || n == 0 {
		return s.products.WarmFilter(ctx)
	}
	ps := make([]Product, n)
	for i := range ps {
		ps[i] = Product{ID: fmt.Sprint("p", i+1), Slug: fmt.Sprint("product-", i+1), Name: fmt.Sprint("Product ", i+1), PriceCents: int64(100 * (i%50 + 1))}
	}
	if err := s.products.CreateMany(ctx, ps); err != nil {
		return err
	}
	// The rows are in. Their invalidations (which clear any cached "not
	// found") may have timed out on a slow Redis: they are retried in the
	// background, and until then reads of those ids skip the cache. Wait
	// for them before serving.
	for s.cache.PendingInvalidations() > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	return ctx.Err()
}

// Backend describes the backends, e.g. "miniredis + SQLite".
func (s *Service) Backend() string { return s.backend }

// Close releases everything Open made, last first.
func (s *Service) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}
