package cacheaside

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// Tests that set a process-wide switch or hook (testswitch, leaseLostHook,
// rejectedSetHook, clusterMasters), count the process's allocations, kill
// or flush what the shared Redis holds (CLIENT KILL, SCRIPT FLUSH) or
// check for leaked goroutines stay serial: go runs every serial test
// before the first parallel one resumes, so they run alone. Every other
// test calls t.Parallel (most wait on Redis, not on the CPU).
func TestMain(m *testing.M) { testcontainers.Main(m) }

type user struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Ver  int    `json:"ver"`
}

// newCache returns a Cache over client in namespace ns, closed at cleanup.
func newCache(t testing.TB, client redis.UniversalClient, ns string, opts *Options) *Cache {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	o.Namespace = ns
	c, err := New(client, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if c.settle.learnt != nil {
		<-c.settle.learnt // its one command is not counted as the test's
	}
	return c
}

func newEntity[T any](t testing.TB, c *Cache, name string, p Policy) *Entity[T] {
	t.Helper()
	e, err := NewEntity[T](c, name, p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// counter is a loader that counts its calls and returns user{ID: id}, or
// ErrNotFound for ids in absent.
type counter struct {
	calls  atomic.Int64
	absent map[string]bool
}

func (c *counter) load(ctx context.Context, id string) (user, error) {
	c.calls.Add(1)
	if c.absent[id] {
		return user{}, ErrNotFound
	}
	return user{ID: id, Name: "n-" + id}, nil
}

func mustNotFound(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}
