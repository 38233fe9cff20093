package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"

	"github.com/asidekit/asidekit/schema"
	"gorm.io/gorm"
)

// env is what a run's processes share: its database, its two Redis
// servers and its key namespace.
type env struct {
	adminDSN   string
	dbName     string
	dsn        *url.URL // of the run's database, direct
	pgAddr     string
	admin      *gorm.DB // on adminDSN's database, to create and drop the run's
	db         *gorm.DB // on the run's database, direct (setup and checks)
	cacheRedis *redisServer
	guardRedis *redisServer
	ns         string
}

// openEnv creates the run's database (named after the seed, with a random
// suffix) and tables, and starts the two Redis servers.
func openEnv(ctx context.Context, adminDSN string, seed uint64) (e *env, err error) {
	e = &env{adminDSN: adminDSN}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	u, err := url.Parse(adminDSN)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("chaos: PostgreSQL DSN %q: want postgres://user@host:port/db", adminDSN)
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	e.dbName = fmt.Sprintf("asidechaos_%d_%s", seed, hex.EncodeToString(suffix))
	e.ns = "chaos" + hex.EncodeToString(suffix)
	e.pgAddr = u.Host
	if e.admin, err = openDB(adminDSN, 2); err != nil {
		return nil, err
	}
	if err = e.admin.WithContext(ctx).Exec("CREATE DATABASE " + e.dbName).Error; err != nil {
		e.dbName = ""
		return nil, fmt.Errorf("chaos: create database: %w", err)
	}
	d := *u
	d.Path = "/" + e.dbName
	e.dsn = &d
	if e.db, err = openDB(withApp(d, "asidechaos-checker"), 4); err != nil {
		return nil, err
	}
	if err = e.db.WithContext(ctx).AutoMigrate(&Item{}, &fenceRow{}, &schema.SeqSegment{}); err != nil {
		return nil, err
	}
	if err = e.db.WithContext(ctx).Create(&fenceRow{ID: 1}).Error; err != nil {
		return nil, err
	}
	if e.cacheRedis, err = startRedis(ctx); err != nil {
		return nil, err
	}
	if e.guardRedis, err = startRedis(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// dsnVia is the run's DSN with host:port replaced by addr (a proxy).
func (e *env) dsnVia(addr string) string {
	d := *e.dsn
	d.Host = addr
	return withApp(d, "asidechaos")
}

// withApp is u with its application_name set to app.
func withApp(u url.URL, app string) string {
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// terminate ends every connection to the run's database but the checker's
// own (pg_terminate_backend), and returns how many it ended.
func (e *env) terminate(ctx context.Context) (int, error) {
	var n int
	err := e.admin.WithContext(ctx).Raw(
		`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		 WHERE datname = ? AND pid <> pg_backend_pid() AND application_name <> 'asidechaos-checker'`,
		e.dbName).Scan(&n).Error
	return n, err
}

func (e *env) close() {
	for _, s := range []*redisServer{e.cacheRedis, e.guardRedis} {
		if s != nil {
			s.close()
		}
	}
	if e.db != nil {
		if sqlDB, err := e.db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
	if e.admin != nil {
		if e.dbName != "" {
			_ = e.admin.Exec("DROP DATABASE IF EXISTS " + e.dbName + " WITH (FORCE)").Error
		}
		if sqlDB, err := e.admin.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
}
