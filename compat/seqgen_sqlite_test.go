package compat_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // Asia/Shanghai on machines without zoneinfo

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/seqgen"
)

// The embedded backend of the demo and benchmarks: SQLite (no row locks,
// no FOR UPDATE) and miniredis. A smoke test; the real tests run on
// PostgreSQL and Redis.
func TestGenerator_Next_sqliteMiniredis(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	db, err := gorm.Open(sqlite.Open(filepath.Join(t.TempDir(), "seq.db")+"?_pragma=busy_timeout(5000)"),
		&gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	sqlDB.SetMaxOpenConns(1) // SQLite has one writer
	t.Cleanup(func() { _ = sqlDB.Close() })
	if err := sample.Migrate(db); err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&sample.Order{Serial: "ORD2026112900041", UserID: 1, Amount: 1}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&sample.Order{Serial: "ORD20261129100005", UserID: 1, Amount: 1}).Error; err != nil {
		t.Fatal(err) // a widened serial outranks the five-digit ones
	}
	g := newGen(t, rdb, db, &seqgen.Options{
		Location: shanghai, Clock: fixedClock(noon), Segment: 20, Width: 5,
		Overflow: seqgen.OverflowWiden, SeedFrom: seqgen.MaxSerial("orders", "serial"),
	})

	const workers, each = 8, 50
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for i := 0; i < each; i++ {
				s, err := g.Next(context.Background(), "ORD")
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[s] {
					t.Errorf("%s issued twice", s)
				}
				seen[s] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for v := int64(100006); v < 100006+workers*each; v++ {
		if s := "ORD20261129" + itoa(v); !seen[s] {
			t.Fatalf("%s missing: want the %d numbers after the table's 100005", s, workers*each)
		}
	}
	mr.FlushAll() // lost keys: re-seeded from the SQLite mark
	s := mustNext(t, g, "ORD")
	if v := counterOf(t, s, "ORD20261129"); v <= 100005+workers*each {
		t.Fatalf("after a flush Next = %d, want above every number issued", v)
	}
}

// The helpers below are copies of seqgen's test helpers.

// shanghai is the zone of every test.
var shanghai = mustZone("Asia/Shanghai")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// noon is a fixed instant in the middle of 2026-11-29 in Shanghai, far from
// any midnight.
var noon = time.Date(2026, 11, 29, 12, 0, 0, 0, shanghai)

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func newGen(t testing.TB, client redis.UniversalClient, db *gorm.DB, o *seqgen.Options) *seqgen.Generator {
	t.Helper()
	// miniredis runs in process: there is no stall for RedisTimeout to
	// guard against, and on a busy machine its scripts can pass 200 ms.
	// (Its keys never expire on their own, so a lease left by a call that
	// passed its deadline would hold every caller until the end.)
	if o.RedisTimeout == 0 {
		o.RedisTimeout = time.Minute
	}
	g, err := seqgen.New(client, db, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// counterOf parses the counter of serial, which must start with prefix.
func counterOf(t testing.TB, serial, prefix string) int64 {
	t.Helper()
	rest, ok := strings.CutPrefix(serial, prefix)
	if !ok {
		t.Fatalf("serial %q does not start with %q", serial, prefix)
	}
	v, err := strconv.ParseInt(rest, 10, 64)
	if err != nil {
		t.Fatalf("serial %q: %v", serial, err)
	}
	return v
}

func mustNext(t testing.TB, g *seqgen.Generator, biz string) string {
	t.Helper()
	s, err := g.Next(context.Background(), biz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
