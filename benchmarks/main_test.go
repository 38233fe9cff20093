package benchmarks_test

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// logicalEnv opens the scenarios' environment on a logical-replication
// PostgreSQL and a Redis namespace of the test's own, closed at cleanup.
func logicalEnv(t *testing.T) *benchmarks.Env {
	t.Helper()
	pg := testcontainers.LogicalPostgres(t)
	rd := testcontainers.Redis(t)
	env, err := benchmarks.Open(context.Background(), benchmarks.Config{RedisAddr: rd.Addrs[0], PostgresDSN: pg.DSN, DBPool: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return env
}

// embeddedEnv opens the embedded backend (miniredis, SQLite), closed at
// cleanup.
func embeddedEnv(t *testing.T) *benchmarks.Env {
	t.Helper()
	env, err := benchmarks.Open(context.Background(), benchmarks.Config{Embedded: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	return env
}
