package testcontainers

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// PostgresDB is a PostgreSQL database that exists for one test.
type PostgresDB struct {
	// DB is a GORM handle on the database, closed at cleanup.
	DB *gorm.DB
	// DSN connects to the database, for code that opens its own pool.
	DSN string
	// Name is the database's name.
	Name string
	// Source says how the server was found.
	Source Source
}

var pgServer resolved[string] // admin DSN

func findPostgres() (string, Source, error) {
	if dsn := os.Getenv(EnvPostgresDSN); dsn != "" {
		return dsn, SourceEnv, nil
	}
	return startPostgresServer("PostgreSQL", nil)
}

// startPostgresServer starts a server for findPostgres and
// findLogicalPostgres: a Docker container, else postgres from PATH, each
// with the server arguments args. reasons are the failures so far; what
// names the server in the error when neither starts.
func startPostgresServer(what string, reasons []string, args ...string) (string, Source, error) {
	if err := dockerAvailable(); err == nil {
		dsn, err := docker.startPostgres(args...)
		if err == nil {
			return dsn, SourceDocker, nil
		}
		reasons = append(reasons, "docker: "+err.Error())
	} else {
		reasons = append(reasons, err.Error())
	}
	dsn, err := startPostgresBinary(args...)
	if err == nil {
		return dsn, SourceBinary, nil
	}
	reasons = append(reasons, err.Error())
	return "", "", noBackend(what, EnvPostgresDSN, "postgres and initdb", reasons)
}

// Postgres returns a fresh database on the resolved PostgreSQL server,
// created for this test and dropped (with its connections) at cleanup.
func Postgres(t testing.TB) *PostgresDB {
	t.Helper()
	admin, src, err := pgServer.get(findPostgres)
	return databaseOn(t, admin, src, err)
}

// databaseOn returns a fresh database on the server of admin (found from
// src), or fails t with err, the server's error.
func databaseOn(t testing.TB, admin string, src Source, err error) *PostgresDB {
	t.Helper()
	if err != nil {
		fatal(t, err)
	}
	db, err := newDatabase(t, admin)
	if err != nil {
		fatal(t, err)
	}
	db.Source = src
	return db
}

func newDatabase(t testing.TB, admin string) (*PostgresDB, error) {
	db, drop, err := createDatabase(admin, "ak_test_")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Logf("testcontainers: %v", err)
		}
	})
	return db, nil
}

// createDatabase creates a database named prefix + a random suffix on the
// server of admin and opens it; drop closes it and drops the database with
// its connections.
func createDatabase(admin, prefix string) (db *PostgresDB, drop func() error, err error) {
	name := uniqueName(prefix)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := adminExec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		return nil, nil, fmt.Errorf("create database: %w", err)
	}
	var gdb *gorm.DB
	drop = func() error {
		if gdb != nil {
			if sqlDB, err := gdb.DB(); err == nil {
				_ = sqlDB.Close()
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := adminExec(ctx, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	dsn, err := withDatabase(admin, name)
	if err == nil {
		gdb, err = gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	}
	if err != nil {
		_ = drop() // not left behind
		return nil, nil, fmt.Errorf("open database %s: %w", name, err)
	}
	return &PostgresDB{DB: gdb, DSN: dsn, Name: name}, drop, nil
}

func adminExec(ctx context.Context, dsn, stmt string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

var dbnameKV = regexp.MustCompile(`(^|\s)dbname=\S*`)

// withDatabase returns dsn (a URL or key=value string) pointed at database name.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvPostgresDSN, err)
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	if strings.TrimSpace(dsn) == "" {
		return "", errors.New("empty PostgreSQL DSN")
	}
	if dbnameKV.MatchString(dsn) {
		return dbnameKV.ReplaceAllString(dsn, "${1}dbname="+name), nil
	}
	return dsn + " dbname=" + name, nil
}
