package cdc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// patience bounds every wait for an event: generous, so that a machine
// five times slower still passes; a correct run never comes near it.
const patience = 60 * time.Second

// env is one test's backends: a database on a logical-replication server
// with the sample schema, a Redis namespace, and a users repository with
// a Bloom filter whose cached rows and absences never expire during the
// test (only an invalidation can refresh them).
type env struct {
	db    *gorm.DB
	dsn   string
	rdb   redis.UniversalClient
	ns    string
	cache *cacheaside.Cache
	users *repo.Repository[sample.User, int64]
	// slot names the test's replication slot and publication: slots are
	// server-wide, so each test has its own.
	slot string
}

func newEnv(t testing.TB, rdb redis.UniversalClient, ns string) *env {
	t.Helper()
	return newEnvOn(t, testcontainers.LogicalPostgres(t), rdb, ns)
}

// newEnvOn is newEnv on the database pg.
func newEnvOn(t testing.TB, pg *testcontainers.PostgresDB, rdb redis.UniversalClient, ns string) *env {
	t.Helper()
	if err := sample.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	cache, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	users, err := repo.New[sample.User, int64](pg.DB, cache, &repo.Options{
		Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour},
		Filter: &bloom.Options{Namespace: ns, Capacity: 10_000, FalsePositiveRate: 0.001},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = users.Close() })
	return &env{db: pg.DB, dsn: pg.DSN, rdb: rdb, ns: ns, cache: cache, users: users,
		slot: "test_" + strconv.FormatUint(rand.Uint64(), 36)}
}

func redisEnv(t testing.TB) *env {
	rn := testcontainers.Redis(t)
	return newEnv(t, rn.Client, rn.Namespace)
}

// invalidator returns an Invalidator of the users table on the test's slot,
// and drops the slot at cleanup (before the database is dropped).
func (e *env) invalidator(t testing.TB, o cdc.Options) *cdc.Invalidator {
	t.Helper()
	if o.Slot == "" {
		o.Slot = e.slot
	}
	inv, err := cdc.New(e.dsn, &o)
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.Register(e.users); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		for {
			err := inv.Drop(ctx)
			if !errors.Is(err, cdc.ErrSlotActive) {
				if err != nil {
					t.Errorf("drop: %v", err)
				}
				return
			}
			// The walsender of a stopped Run may still be exiting.
			select {
			case <-ctx.Done():
				t.Errorf("drop: %v", err)
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	return inv
}

// run runs inv until the returned stop is called (at cleanup at the
// latest); stop waits for Run to return.
func run(t testing.TB, inv *cdc.Invalidator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inv.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// sync waits until inv has applied every transaction committed so far.
func (e *env) sync(t testing.TB, inv *cdc.Invalidator) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	lsn := e.currentLSN(t)
	if err := inv.Wait(ctx, lsn); err != nil {
		t.Fatalf("wait for %s: %v (stats %+v)", lsn, err, inv.Stats())
	}
	// Until the recovery gate opens (CatchUp passed), reads bypass the
	// cache: a test that counts loads or expects a cached value waits.
	if err := e.cache.WaitRecovered(ctx); err != nil {
		t.Fatalf("wait for the recovery gate: %v (stats %+v)", err, inv.Stats())
	}
}

func (e *env) currentLSN(t testing.TB) cdc.LSN {
	t.Helper()
	var s string
	if err := e.db.Raw("SELECT pg_current_wal_lsn()::text").Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	var lsn cdc.LSN
	if err := lsn.Scan(s); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// slotConfirmed returns the slot's confirmed_flush_lsn.
func (e *env) slotConfirmed(t *testing.T, slot string) cdc.LSN {
	t.Helper()
	var s string
	if err := e.db.Raw("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = ?", slot).Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	var lsn cdc.LSN
	if err := lsn.Scan(s); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// exec runs plain SQL, outside the repository.
func (e *env) exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if err := e.db.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// waitFor waits until cond holds, checking it whenever ch fires or every
// few milliseconds; it fails the test after patience.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *env) name(t *testing.T, id int64) string {
	t.Helper()
	u, err := e.users.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	return u.Name
}

// waitWritten waits until inv has applied every transaction committed
// before it was called (db's log position then).
func waitWritten(ctx context.Context, db *gorm.DB, inv *cdc.Invalidator) error {
	var pos string
	if err := db.WithContext(ctx).Raw("SELECT pg_current_wal_lsn()::text").Scan(&pos).Error; err != nil {
		return err
	}
	var lsn cdc.LSN
	if err := lsn.Scan(pos); err != nil {
		return err
	}
	return inv.Wait(ctx, lsn)
}
