package repo_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// faultEnv is two processes' repositories (a and b, each with its own
// Cache, Redis client, primary pool and Options.ReadDB on the replica) on
// one primary and streaming replica, sharing a private redis-server that
// the test stops and starts again empty.
type faultEnv struct {
	sr   *testcontainers.StreamingReplica
	srv  *testcontainers.RedisServer
	rdbs []redis.UniversalClient
	// caches are a's and b's (each settles after the Redis faults:
	// cacheaside.Options.SettleWindow).
	caches []*cacheaside.Cache
	a, b   *repo.Repository[sample.User, int64]
	// byEmail is a cached query of b's.
	byEmail *repo.Query[sample.User, int64]
}

// openDB opens a pool of its own on dsn, closed at cleanup.
func openDB(t *testing.T, dsn string) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			_ = s.Close()
		}
	})
	return db
}

// newFaultEnv builds a faultEnv on sr (migrated); without rule, both
// repositories take a position they could not read for 0.
func newFaultEnv(t *testing.T, sr *testcontainers.StreamingReplica, rule bool) *faultEnv {
	t.Helper()
	e := &faultEnv{sr: sr, srv: testcontainers.NewRedisServer(t)}
	repos := make([]*repo.Repository[sample.User, int64], 2)
	for i := range repos {
		rdb := redis.NewClient(&redis.Options{Addr: e.srv.Addr, DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		e.rdbs = append(e.rdbs, rdb)
		env := newEnvOn(t, openDB(t, sr.Primary.DSN), rdb, "f")
		e.caches = append(e.caches, env.cache)
		repos[i] = env.users(t, repo.Options{ReadDB: openDB(t, sr.ReplicaDSN)})
		if !rule {
			repo.IgnoreUnknownLSN(repos[i])
		}
	}
	e.a, e.b = repos[0], repos[1]
	q, err := repo.NewQuery(e.b, repo.QueryOf{Name: "by_email", Where: []string{"email"}, Order: "id"})
	if err != nil {
		t.Fatal(err)
	}
	e.byEmail = q
	return e
}

// reconnect waits until each client answers again after a Redis restart
// (a pooled connection to the old server fails once).
func (e *faultEnv) reconnect(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, rdb := range e.rdbs {
		var err error
		for range 100 {
			if err = rdb.Ping(ctx).Err(); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// names reads row id through every path the test covers (Get on a and on
// b, GetMany on b, b's cached query) and returns the names they returned.
func (e *faultEnv) names(ctx context.Context, t *testing.T, id int64) []string {
	t.Helper()
	var out []string
	for _, r := range []*repo.Repository[sample.User, int64]{e.a, e.b} {
		u, err := r.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u.Name)
	}
	m, err := e.b.GetMany(ctx, []int64{id})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, m[id].Name)
	rows, _, err := e.byEmail.List(ctx, repo.Page{Size: 10}, fmt.Sprintf("u%d@example.com", id))
	if err != nil || len(rows) != 1 {
		t.Fatalf("list: %+v, %v", rows, err)
	}
	return append(out, rows[0].Name)
}

// allAre reports whether every name in got is want.
func allAre(got []string, want string) bool {
	for _, g := range got {
		if g != want {
			return false
		}
	}
	return true
}

// With the replica's replay paused, Redis fails while a write is made
// (cut: stopped, so the write's invalidation is pending and every read
// runs without the cache) or after it (restart: started again empty, so
// the version that held the write's position is gone). Every read, on the
// writer's and on another process's repository, by Get, GetMany and a
// cached query, returns the new row, and once the replay resumed the
// cache holds no old row. With the rule off (a position that could not
// be read taken for 0) the reads load the replica's old row.
func TestReplica_redisFaults(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sr := testcontainers.NewStreamingReplica(t, 0)
	if err := sample.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	id := int64(0)
	for _, fault := range []string{"cut", "restart"} {
		for _, rule := range []bool{true, false} {
			id++
			t.Run(fault+map[bool]string{true: "/rule", false: "/noRule"}[rule], func(t *testing.T) {
				e := newFaultEnv(t, sr, rule)
				u := sample.User{ID: id, Email: fmt.Sprintf("u%d@example.com", id), Name: "Ada"}
				if err := e.a.Create(ctx, &u); err != nil {
					t.Fatal(err)
				}
				if err := sr.WaitReplayed(ctx); err != nil {
					t.Fatal(err)
				}
				if got := e.names(ctx, t, id); !allAre(got, "Ada") {
					t.Fatalf("before the fault: %v", got)
				}
				if err := sr.PauseReplay(ctx); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = sr.ResumeReplay(context.WithoutCancel(ctx)) }()
				if fault == "cut" {
					e.srv.Stop()
				}
				u.Name = "Bea"
				if err := e.a.Update(ctx, &u); err != nil {
					t.Fatalf("Update: %v", err)
				}
				if fault == "restart" {
					e.srv.Stop()
					if err := e.srv.Start(); err != nil {
						t.Fatal(err)
					}
					e.reconnect(ctx, t)
				}
				during := e.names(ctx, t, id)
				if fault == "cut" {
					if err := e.srv.Start(); err != nil {
						t.Fatal(err)
					}
					e.reconnect(ctx, t)
				}
				if err := sr.ResumeReplay(ctx); err != nil {
					t.Fatal(err)
				}
				if err := sr.WaitReplayed(ctx); err != nil {
					t.Fatal(err)
				}
				after := e.names(ctx, t, id)
				sa, sb := e.a.ReadStats(), e.b.ReadStats()
				if !rule {
					if allAre(during, "Bea") && allAre(after, "Bea") {
						t.Fatalf("rule off: reads %v then %v, want an old row (else this test shows nothing)", during, after)
					}
					return
				}
				if !allAre(during, "Bea") || !allAre(after, "Bea") {
					t.Fatalf("reads during the fault %v, after the replay resumed %v; want Bea everywhere; stats %+v, %+v", during, after, sa, sb)
				}
				if fault == "restart" {
					// Once the caches have settled (no fill is stored within
					// the settle window after a restart), a load of the id on
					// the primary records the primary's position in the
					// version: once the replica has replayed it, a miss of
					// the id loads there again.
					for _, c := range e.caches {
						for c.Settling() {
							if err := ctx.Err(); err != nil {
								t.Fatal(err)
							}
							time.Sleep(10 * time.Millisecond) // a poll of the window's end, not a wait for an event
						}
					}
					if err := e.rdbs[0].Del(ctx, repo.EntryKey(e.a, id)).Err(); err != nil {
						t.Fatal(err)
					}
					if _, err := e.a.Get(ctx, id); err != nil {
						t.Fatal(err)
					}
					if err := sr.WaitReplayed(ctx); err != nil {
						t.Fatal(err)
					}
					sb = e.b.ReadStats()
					if err := e.rdbs[0].Del(ctx, repo.EntryKey(e.a, id)).Err(); err != nil {
						t.Fatal(err)
					}
					if got, err := e.b.Get(ctx, id); err != nil || got.Name != "Bea" {
						t.Fatalf("read after the entry was dropped: %+v, %v", got, err)
					}
					if s := e.b.ReadStats(); s.ReplicaLoads != sb.ReplicaLoads+1 {
						t.Fatalf("stats %+v then %+v: want the miss on the replica (the version records the primary's position)", sb, s)
					}
				}
				// Cut: both processes load, without the cache. Restart: the
				// first read's fill serves the other process's reads.
				if sa.RedirectedUnknown == 0 || (fault == "cut" && sb.RedirectedUnknown == 0) {
					t.Fatalf("stats %+v, %+v: want loads redirected for an unknown position", sa, sb)
				}
			})
		}
	}
}

// New refuses a ReadDB that shares the primary *gorm.DB's *gorm.Config
// (gorm.Open with one Config: both handles end up on the last pool) or
// its connection pool, and accepts one opened on its own.
func TestReplica_newRefusesSharedReadDB(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	silent := logger.Default.LogMode(logger.Silent)
	cfg := &gorm.Config{Logger: silent}
	first, err := gorm.Open(postgres.Open(e.dsn), cfg)
	if err != nil {
		t.Fatal(err)
	}
	closePool(t, first) // before the second Open replaces cfg's pool
	second, err := gorm.Open(postgres.Open(e.dsn), cfg)
	if err != nil {
		t.Fatal(err)
	}
	closePool(t, second)
	primary := openDB(t, e.dsn)
	pool, err := primary.DB()
	if err != nil {
		t.Fatal(err)
	}
	samePool, err := gorm.Open(postgres.New(postgres.Config{Conn: pool}), &gorm.Config{Logger: silent})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		db, read *gorm.DB
		ok       bool
	}{
		{"sharedConfig", first, second, false},
		{"sharedPool", primary, samePool, false},
		{"self", primary, primary, false},
		{"own", primary, openDB(t, e.dsn), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := repo.New[sample.User, int64](c.db, e.cache, &repo.Options{ReadDB: c.read, Ownership: repo.OwnershipShared})
			switch {
			case c.ok && err != nil:
				t.Fatalf("New: %v", err)
			case c.ok:
				_ = r.Close()
			case !errors.Is(err, repo.ErrInvalid):
				t.Fatalf("New: %v, want an error matching ErrInvalid", err)
			}
		})
	}
}

// closePool closes db's connection pool at cleanup.
func closePool(t *testing.T, db *gorm.DB) {
	t.Helper()
	s, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
}

// A write whose commit position cannot be read on the primary (its role
// may not run pg_current_wal_insert_lsn()) records UnknownLSN: it returns
// nil, the failure is counted and logged once per kind of error, and
// another process's read of the row, with the replica's replay paused,
// loads it from the primary (counted) and returns the new row. With the
// rule off (the unknown position taken for 0) it loads the replica's old
// row. Not parallel: it captures the default logger.
func TestReplica_unknownWritePosition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sr := testcontainers.NewStreamingReplica(t, 0)
	if err := sample.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE ROLE app LOGIN",
		"GRANT ALL ON users TO app",
		"REVOKE EXECUTE ON FUNCTION pg_current_wal_insert_lsn() FROM PUBLIC",
	} {
		if err := sr.Primary.DB.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	appDSN := strings.Replace(sr.Primary.DSN, "postgres://postgres@", "postgres://app@", 1)
	if appDSN == sr.Primary.DSN {
		t.Fatalf("DSN %q: no postgres user to replace", sr.Primary.DSN)
	}
	logs := testkit.CaptureLogs(t)
	for i, rule := range []bool{true, false} {
		id := int64(i + 1)
		t.Run(map[bool]string{true: "rule", false: "noRule"}[rule], func(t *testing.T) {
			rn := testcontainers.Redis(t)
			writer := newEnvOn(t, openDB(t, appDSN), rn.Client, rn.Namespace).users(t, repo.Options{ReadDB: openDB(t, sr.ReplicaDSN)})
			reader := newEnvOn(t, openDB(t, sr.Primary.DSN), rn.NewClient(t), rn.Namespace).users(t, repo.Options{ReadDB: openDB(t, sr.ReplicaDSN)})
			if !rule {
				repo.IgnoreUnknownLSN(reader)
			}
			before := reader.ReadStats().WritePositionErrors
			u := sample.User{ID: id, Email: fmt.Sprintf("u%d@example.com", id), Name: "Ada"}
			if err := writer.Create(ctx, &u); err != nil {
				t.Fatal(err)
			}
			if err := sr.WaitReplayed(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := reader.Get(ctx, id); err != nil || got.Name != "Ada" {
				t.Fatalf("first read: %+v, %v", got, err)
			}
			if err := sr.PauseReplay(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sr.ResumeReplay(context.WithoutCancel(ctx)) }()
			u.Name = "Bea"
			if err := writer.Update(ctx, &u); err != nil {
				t.Fatalf("Update: %v", err)
			}
			got, err := reader.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			s := reader.ReadStats()
			if !rule {
				if got.Name != "Ada" {
					t.Fatalf("rule off: read %q, want the replica's old Ada (else this test shows nothing)", got.Name)
				}
				return
			}
			if got.Name != "Bea" {
				t.Fatalf("read %q after the write, want Bea; stats %+v", got.Name, s)
			}
			if s.WritePositionErrors-before != 2 || s.RedirectedUnknown == 0 {
				t.Fatalf("stats %+v: want 2 more write position errors (Create, Update) and a load redirected for an unknown position", s)
			}
			if lines := logs.At(slog.LevelError, "asidekit: the position of a commit"); len(lines) != 1 || !strings.Contains(lines[0], "42501") {
				t.Fatalf("logged %q: want one line, with SQLSTATE 42501", lines)
			}
		})
	}
}
