package testcontainers

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"
	"time"
)

// logicalArgs are the server settings logical replication tests need:
// wal_level=logical, room for many slots and senders, and synchronous
// commits, because a WAL sender decodes only flushed WAL (with
// synchronous_commit=off a commit would reach it up to three
// wal_writer_delay later).
var logicalArgs = []string{
	"-c", "wal_level=logical",
	"-c", "max_replication_slots=64",
	"-c", "max_wal_senders=64",
	"-c", "synchronous_commit=on",
}

var logicalServer resolved[string] // admin DSN

// findLogicalPostgres resolves a server with wal_level=logical: the
// environment's when it has that level (it is never reconfigured), then
// Docker, then binaries from PATH, each started with logicalArgs.
func findLogicalPostgres() (string, Source, error) {
	var reasons []string
	if dsn := os.Getenv(EnvPostgresDSN); dsn != "" {
		level, err := walLevel(dsn)
		if err == nil && level == "logical" {
			return dsn, SourceEnv, nil
		}
		reasons = append(reasons, fmt.Sprintf("%s: wal_level %q (%v)", EnvPostgresDSN, level, err))
	}
	return startPostgresServer("PostgreSQL with wal_level=logical", reasons, logicalArgs...)
}

// LogicalPostgres returns a fresh database, as Postgres does, on a server
// with wal_level=logical, for logical replication (repo/cdc): the
// server of ASIDEKIT_POSTGRES_DSN when it reports wal_level=logical;
// otherwise a Docker container started with -c wal_level=logical;
// otherwise initdb and postgres from PATH with that setting. The server is
// started once per test binary.
//
// The database is dropped at cleanup, which PostgreSQL refuses while a
// replication slot of it exists: drop the test's slots in a cleanup
// registered after this call (cleanups run last-in, first-out).
func LogicalPostgres(t testing.TB) *PostgresDB {
	t.Helper()
	admin, src, err := logicalServer.get(findLogicalPostgres)
	return databaseOn(t, admin, src, err)
}

func walLevel(dsn string) (string, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var level string
	err = db.QueryRowContext(ctx, "SHOW wal_level").Scan(&level)
	return level, err
}

// PrivateLogicalPostgres returns a fresh database, as LogicalPostgres does,
// on a server of its own, started for this call (Docker, else binaries from
// PATH; never the environment's server, which is never reconfigured) with
// wal_level=logical and settings ("name=value", e.g.
// "max_slot_wal_keep_size=1MB"), for a test that needs server settings no
// other test may share. The server stops when the test binary's Main ends.
func PrivateLogicalPostgres(t testing.TB, settings ...string) *PostgresDB {
	t.Helper()
	args := append([]string(nil), logicalArgs...)
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	admin, src, err := startPostgresServer("private PostgreSQL with wal_level=logical", nil, args...)
	return databaseOn(t, admin, src, err)
}

// LogicalServer is a private PostgreSQL server with wal_level=logical,
// started from the initdb and postgres binaries on PATH on a free loopback
// port, outside a test (StartLogicalPostgres).
type LogicalServer struct {
	// DB is a fresh database on the server.
	DB *PostgresDB

	server *binServer
	drop   func() error
}

// StartLogicalPostgres is PrivateLogicalPostgres outside a test (the chaos
// suite's CDC phase uses it): a server of its own from binaries on PATH
// (never the environment's server or Docker), with wal_level=logical and
// settings ("name=value"), and a fresh database on it. The caller stops
// the server with Close.
func StartLogicalPostgres(settings ...string) (*LogicalServer, error) {
	args := append([]string(nil), logicalArgs...)
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	server, err := startPGServer(args...)
	if err != nil {
		return nil, err
	}
	db, drop, err := createDatabase(server.dsn, "ak_test_")
	if err != nil {
		server.p.Stop()
		return nil, err
	}
	db.Source = SourceBinary
	return &LogicalServer{DB: db, server: server, drop: drop}, nil
}

// Close drops the database (its replication slots must be dropped
// first) and stops the server. It may be called more than once.
func (s *LogicalServer) Close() {
	if s.drop != nil {
		_ = s.drop()
		s.drop = nil
	}
	if s.server != nil {
		s.server.p.Stop()
		s.server = nil
	}
}
