package testcontainers

import (
	"os"
	"testing"
)

// LogicalPostgres hands out a database on a server with wal_level=logical,
// whatever the level of the environment's server (which it never changes).
func TestLogicalPostgres(t *testing.T) {
	envLevel := ""
	if dsn := os.Getenv(EnvPostgresDSN); dsn != "" {
		envLevel, _ = walLevel(dsn)
	}
	pg := LogicalPostgres(t)
	level, err := walLevel(pg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	if level != "logical" {
		t.Fatalf("wal_level = %q, want logical", level)
	}
	if envLevel != "" && envLevel != "logical" && pg.Source == SourceEnv {
		t.Fatalf("used the environment's server, whose wal_level is %q", envLevel)
	}
	if after, _ := walLevel(os.Getenv(EnvPostgresDSN)); envLevel != "" && after != envLevel {
		t.Fatalf("the environment's server changed wal_level from %q to %q", envLevel, after)
	}
	t.Logf("source %s (environment's server: %q)", pg.Source, envLevel)
}
