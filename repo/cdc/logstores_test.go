package cdc_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
)

// stored has a column of each type repo.Options.LogStores stores from the
// log, nullable ones as pointers, and a soft-delete column.
type stored struct {
	ID      int64     `gorm:"primaryKey"`
	Small   int16     `gorm:"not null"`
	Big     int64     `gorm:"not null"`
	Count   uint32    `gorm:"not null"`
	Dbl     float64   `gorm:"type:double precision;not null"`
	Flag    bool      `gorm:"not null"`
	Name    string    `gorm:"type:varchar(40);not null"`
	Letters string    `gorm:"type:char(4);not null"`
	Body    string    `gorm:"type:text;not null"`
	Code    string    `gorm:"type:uuid;not null"`
	Blob    []byte    `gorm:"type:bytea"`
	Day     time.Time `gorm:"type:date;not null"`
	Stamp   time.Time `gorm:"type:timestamp;not null"`
	Touched time.Time `gorm:"type:timestamptz;not null"`
	When    *time.Time
	Note    *string
	Score   *int64
	Deleted gorm.DeletedAt
}

// With Options.LogStores, a row changed with plain SQL is stored from the
// log: after each write and a Wait, a read of it is a hit (no load) that
// equals a direct database read, field for field (times in the zone a
// load gives them: the server's TimeZone is not UTC, so the log's text
// carries another offset). A row inserted where a miss cached "not found"
// is stored too, and a soft delete or a DELETE leaves the row's absence
// cached. Without the option the same reads load.
func TestInvalidator_logStores(t *testing.T) {
	t.Parallel()
	e := redisEnv(t)
	var dbName string
	if err := e.db.Raw("SELECT current_database()").Scan(&dbName).Error; err != nil {
		t.Fatal(err)
	}
	e.exec(t, fmt.Sprintf(`ALTER DATABASE %q SET timezone = 'Asia/Kathmandu'`, dbName))
	if err := e.db.AutoMigrate(&stored{}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			e.exec(t, "TRUNCATE storeds")
			db, pool := countedDB(t, e.db)
			r, err := repo.New[stored, int64](db, e.cache, &repo.Options{Name: fmt.Sprint("storeds_", on),
				Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour}, LogStores: on})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Close() })
			inv, err := cdc.New(e.dsn, &cdc.Options{Slot: fmt.Sprint(e.slot, "_s_", on)})
			if err != nil {
				t.Fatal(err)
			}
			if err := inv.Register(r); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inv.Drop(context.Background()) })
			run(t, inv)
			e.sync(t, inv)

			// same fails unless got is row id of the table.
			same := func(what string, id int64, got stored) {
				t.Helper()
				var want stored
				if err := e.db.Unscoped().First(&want, id).Error; err != nil {
					t.Fatal(err)
				}
				// As the cache encodes them (a value read from the cache has
				// been through its codec: its times are in UTC, not Local).
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				if string(g) != string(w) {
					t.Fatalf("%s: row %d from the cache\n%s\nthe table's\n%s", what, id, g, w)
				}
			}
			// check reads ids through r: each must equal the table's row,
			// and be a hit when the option is on (loaded when load), and
			// a load one statement (with the option on, the position rides
			// on the load's SELECT).
			check := func(what string, load bool, ids ...int64) {
				t.Helper()
				for _, id := range ids {
					before, stmts := r.Stats().Loads, pool.n.Load()
					got, err := r.Get(ctx, id)
					if err != nil {
						t.Fatalf("%s: get %d: %v", what, id, err)
					}
					loads := r.Stats().Loads - before
					if n := pool.n.Load() - stmts; n != int64(loads) {
						t.Fatalf("%s: row %d: %d statements for %d loads", what, id, n, loads)
					}
					same(what, id, got)
					if want := map[bool]uint64{true: 1, false: 0}[load || !on]; loads != want {
						t.Fatalf("%s: row %d: %d loads, want %d (LogStores %v)", what, id, loads, want, on)
					}
				}
			}
			stmts := pool.n.Load()
			if _, err := r.Get(ctx, 3); err == nil { // "not found" cached, with a version
				t.Fatal("row 3 before the insert")
			}
			// A load that found no row has no position column: one more
			// query reads it when the option is on.
			if n, want := pool.n.Load()-stmts, map[bool]int64{true: 2, false: 1}[on]; n != want {
				t.Fatalf("absent row 3: %d statements, want %d", n, want)
			}
			step := func(what, sql string, ids ...int64) {
				t.Helper()
				e.exec(t, sql)
				e.sync(t, inv)
				check(what, false, ids...)
			}
			insert := `INSERT INTO storeds (id, small, big, count, dbl, flag, name, letters, body, code, blob, day, stamp, touched, "when", note, score)
				SELECT g, g, g::bigint * 1000000007, g * 3, g / 3.0, g % 2 = 0, 'n' || g, 'ab', repeat('x', g), gen_random_uuid(),
					CASE WHEN g = 2 THEN NULL ELSE decode('00ff' || lpad(to_hex(g), 2, '0'), 'hex') END,
					date '2026-12-01' + g, timestamp '2026-12-04 20:41:34.665321' + g * interval '1 second',
					timestamptz '2026-12-04 20:41:34.665321+00' - g * interval '1 minute',
					CASE WHEN g = 1 THEN NULL ELSE timestamptz '2026-12-07 01:02:03.5+05' END,
					CASE WHEN g = 2 THEN NULL ELSE 'note ' || g END, CASE WHEN g = 1 THEN NULL ELSE -g END
				FROM generate_series(1, 3) g`
			e.exec(t, insert)
			e.sync(t, inv)
			check("INSERT over a cached absence", false, 3)
			check("first read", true, 1) // no version yet: loaded, and the load records its position
			stmts = pool.n.Load()
			got, err := r.GetMany(ctx, []int64{2})
			if err != nil || len(got) != 1 {
				t.Fatalf("GetMany(2) = %v, %v", got, err)
			}
			if n := pool.n.Load() - stmts; n != 1 {
				t.Fatalf("GetMany of a row without a version: %d statements, want 1", n)
			}
			same("GetMany", 2, got[2])
			if on {
				step("UPDATE every column", `UPDATE storeds SET small = small + 1, big = -big, count = count + 1, dbl = dbl * 2,
					flag = NOT flag, name = name || 'x', letters = 'cd', body = body || 'y', code = gen_random_uuid(),
					blob = NULL, day = day + 1, stamp = stamp + interval '1.5 seconds', touched = touched - interval '1 hour',
					"when" = timestamptz '2026-12-08 00:00:00.25+00', note = NULL, score = 7 WHERE id IN (1, 2)`, 1, 2)
				step("UPDATE one column", "UPDATE storeds SET name = 'one' WHERE id = 2", 2)
				e.exec(t, "BEGIN; UPDATE storeds SET big = 1 WHERE id = 1; UPDATE storeds SET big = 2 WHERE id = 1; COMMIT")
				e.sync(t, inv)
				check("after two UPDATEs in one transaction (the second store is refused: a load)", true, 1)
				// A soft delete and a DELETE store the row's absence: read
				// from the cache.
				gone := func(what, sql string, id int64) {
					t.Helper()
					e.exec(t, sql)
					e.sync(t, inv)
					before, stmts := r.Stats().Loads, pool.n.Load()
					if _, err := r.Get(ctx, id); !errors.Is(err, repo.ErrNotFound) {
						t.Fatalf("row %d after its %s: %v, want ErrNotFound", id, what, err)
					}
					if loads, n := r.Stats().Loads-before, pool.n.Load()-stmts; loads != 0 || n != 0 {
						t.Fatalf("row %d after its %s: %d loads, %d statements, want the absence from the cache", id, what, loads, n)
					}
				}
				gone("soft delete", "UPDATE storeds SET deleted = now() WHERE id = 3", 3)
				gone("DELETE", "DELETE FROM storeds WHERE id = 1", 1)
			}
		})
	}
}

// countedPool counts the statements sent through it: a repository's loads,
// and the position queries it makes on its pool beside them.
type countedPool struct {
	gorm.ConnPool
	n atomic.Int64
}

func (p *countedPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	p.n.Add(1)
	return p.ConnPool.QueryContext(ctx, q, args...)
}

func (p *countedPool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	p.n.Add(1)
	return p.ConnPool.QueryRowContext(ctx, q, args...)
}

func (p *countedPool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	p.n.Add(1)
	return p.ConnPool.ExecContext(ctx, q, args...)
}

// countedDB is a *gorm.DB on db's connections whose statements pool counts.
func countedDB(t *testing.T, db *gorm.DB) (*gorm.DB, *countedPool) {
	t.Helper()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	pool := &countedPool{ConnPool: sqlDB}
	cdb, err := gorm.Open(postgres.New(postgres.Config{Conn: pool}), &gorm.Config{Logger: db.Logger})
	if err != nil {
		t.Fatal(err)
	}
	return cdb, pool
}
