package seqgen_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

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
