package configstore_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/repo/configstore"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// backends is a migrated PostgreSQL database and a Redis namespace for one
// test.
type backends struct {
	pg *testcontainers.PostgresDB
	r  *testcontainers.RedisNamespace
}

func newBackends(t testing.TB) backends {
	t.Helper()
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	return backends{pg: pg, r: testcontainers.Redis(t)}
}

// store returns a Store on client and db in the test's namespace; opts may
// be nil.
func (b backends) store(t testing.TB, client redis.UniversalClient, db *gorm.DB, opts *configstore.Options) *configstore.Store {
	t.Helper()
	o := configstore.Options{}
	if opts != nil {
		o = *opts
	}
	o.Namespace = b.r.Namespace
	s, err := configstore.New(client, db, &o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openDB opens another pool on the test database, as another process
// would, limited to a few connections (the server is shared).
func (b backends) openDB(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(b.pg.DSN), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(8)
	t.Cleanup(func() { _ = sqlDB.Close() })
	return db
}

// countStatements counts every SQL statement db runs from now on.
func countStatements(t *testing.T, db *gorm.DB) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	inc := func(*gorm.DB) { n.Add(1) }
	cb := db.Callback()
	for _, err := range []error{
		cb.Query().After("gorm:query").Register("test:count_query", inc),
		cb.Row().After("gorm:row").Register("test:count_row", inc),
		cb.Raw().After("gorm:raw").Register("test:count_raw", inc),
		cb.Create().After("gorm:create").Register("test:count_create", inc),
		cb.Update().After("gorm:update").Register("test:count_update", inc),
		cb.Delete().After("gorm:delete").Register("test:count_delete", inc),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return &n
}

// dbState reads the scope's rows: key → entry as the hash would hold it
// ("<version>:<value>" or "<version>").
func dbState(t *testing.T, db *gorm.DB, scope string) map[string]string {
	t.Helper()
	var rows []schema.Config
	if err := db.Where("namespace = ?", scope).Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		e := itoa(r.Version)
		if r.Value != nil {
			e += ":" + *r.Value
		}
		out[r.Key] = e
	}
	return out
}

// hashState reads the mirror hash without its built marker.
func hashState(t *testing.T, c redis.UniversalClient, key string) map[string]string {
	t.Helper()
	m, err := c.HGetAll(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	delete(m, "")
	return m
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func ptr(s string) *string { return &s }

// eventually polls cond until it holds or 15 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// privateRedis is a redis-server of this test alone, to stop and start.
type privateRedis struct {
	*testcontainers.RedisServer
	client redis.UniversalClient
}

func newPrivateRedis(t *testing.T) privateRedis {
	t.Helper()
	srv := testcontainers.NewRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return privateRedis{srv, c}
}

// newClient is another client of the private server.
func (p privateRedis) newClient(t *testing.T) redis.UniversalClient {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
