package benchmarks

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// openRedis connects to the configured Redis, or starts miniredis (on a
// Unix socket, see startMiniredis).
func (e *Env) openRedis(ctx context.Context, cfg Config) error {
	switch {
	case len(cfg.RedisCluster) > 0:
		e.Cluster, e.RedisAddrs = true, cfg.RedisCluster
	case cfg.RedisAddr != "":
		e.RedisAddrs = []string{cfg.RedisAddr}
	default:
		mr, path, stopMR, err := startMiniredis()
		if err != nil {
			return err
		}
		// TTLs run down with the wall clock, so keys expire as they would
		// on a real server (miniredis only expires keys on FastForward):
		// runClock advances them every few milliseconds.
		stop, ticking := make(chan struct{}), make(chan struct{})
		go func() { defer close(ticking); runClock(mr, stop) }()
		e.onClose(func() error { close(stop); <-ticking; stopMR(); return nil })
		e.EmbeddedRedis, e.RedisAddrs = true, []string{path}
	}
	e.admin = newClient(e.RedisAddrs, e.Cluster, e.EmbeddedRedis)
	admin := e.admin
	e.onClose(admin.Close)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := admin.Ping(pctx).Err(); err != nil {
		what := "redis " + e.RedisAddrs[0]
		if e.Cluster {
			what = "redis cluster " + strings.Join(e.RedisAddrs, ",")
		}
		e.admin = nil // nothing to clean up there
		return fmt.Errorf("%s: %w: %v", what, ErrUnreachable, err)
	}
	return nil
}

// openDB creates a fresh PostgreSQL database for the run, or opens SQLite
// in a temporary file.
func (e *Env) openDB(ctx context.Context, cfg Config) error {
	gcfg := &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)}
	if cfg.PostgresDSN == "" {
		dir, err := os.MkdirTemp("", "asidebench-")
		if err != nil {
			return fmt.Errorf("benchmarks: sqlite: %w", err)
		}
		e.onClose(func() error { return os.RemoveAll(dir) })
		dsn := "file:" + filepath.Join(dir, "bench.db") +
			"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
		db, err := gorm.Open(sqlite.Open(dsn), gcfg)
		if err != nil {
			return fmt.Errorf("benchmarks: sqlite: %w", err)
		}
		sqlDB, err := db.DB()
		if err != nil {
			return err
		}
		sqlDB.SetMaxOpenConns(cfg.DBPool)
		e.onClose(sqlDB.Close)
		e.DB, e.EmbeddedDB = db, true
		return nil
	}

	where := pgWhere(cfg.PostgresDSN)
	admin, err := sql.Open("pgx", cfg.PostgresDSN)
	if err != nil {
		return fmt.Errorf("postgresql %s: %w", where, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := admin.PingContext(pctx); err != nil {
		_ = admin.Close()
		return fmt.Errorf("postgresql %s: %w: %v", where, ErrUnreachable, firstLine(err))
	}
	admin.SetMaxOpenConns(1)
	name := strings.ReplaceAll(e.Namespace, "-", "_")
	if _, err := admin.ExecContext(pctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close()
		return fmt.Errorf("postgresql %s: create database %s: %v", where, name, firstLine(err))
	}
	e.onClose(func() error {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("benchmarks: drop database %s: %w", name, err)
		}
		return nil
	})
	dsn, err := withDatabase(cfg.PostgresDSN, name)
	if err != nil {
		return err
	}
	db, err := gorm.Open(postgres.Open(dsn), gcfg)
	if err != nil {
		return fmt.Errorf("postgresql %s: %v", where, firstLine(err))
	}
	sqlDB, err := db.DB()
	if err != nil {
		return err
	}
	sqlDB.SetMaxOpenConns(cfg.DBPool)
	sqlDB.SetMaxIdleConns(cfg.DBPool)
	e.onClose(sqlDB.Close)
	if err := warmPool(ctx, sqlDB, cfg.DBPool); err != nil {
		return fmt.Errorf("postgresql %s: %v", where, firstLine(err))
	}
	e.DB = db
	return nil
}

// warmPool opens n connections and returns them to the pool idle, so that
// the first burst of loads of a run does not also pay for PostgreSQL's
// connection start-up (a process per connection): a scenario's first
// variant would otherwise measure it and its readers fall behind.
func warmPool(ctx context.Context, db *sql.DB, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range n {
		c, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

var dbnameKV = regexp.MustCompile(`(^|\s)dbname=\S*`)

// withDatabase returns dsn (a URL or key=value string) pointed at database name.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("benchmarks: parse PostgreSQL DSN: %w", err)
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	if dbnameKV.MatchString(dsn) {
		return dbnameKV.ReplaceAllString(dsn, "${1}dbname="+name), nil
	}
	return dsn + " dbname=" + name, nil
}

var hostKV = regexp.MustCompile(`(?:^|\s)host=(\S+)`)

// pgWhere names the server of dsn without its credentials.
func pgWhere(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Host != "" {
		return u.Host
	}
	if m := hostKV.FindStringSubmatch(dsn); m != nil {
		return m[1]
	}
	return "(DSN)"
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
