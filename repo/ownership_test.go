package repo_test

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// shelfItem and shelfItemV2 map the same table; V2 has one more column.
type shelfItem struct {
	ID   int64 `gorm:"primaryKey"`
	Name string
}

func (shelfItem) TableName() string { return "shelf_items" }

type shelfItemV2 struct {
	ID     int64 `gorm:"primaryKey"`
	Name   string
	Colour string
}

func (shelfItemV2) TableName() string { return "shelf_items" }

// ownershipEnv is two services' databases, each with a shelf_items table,
// and one Redis namespace that both use.
type ownershipEnv struct {
	a, b *testcontainers.PostgresDB
	rdb  redis.UniversalClient
	ns   string
}

func newOwnershipEnv(t *testing.T, rn *testcontainers.RedisNamespace) *ownershipEnv {
	t.Helper()
	e := &ownershipEnv{a: testcontainers.Postgres(t), b: testcontainers.Postgres(t), rdb: rn.Client, ns: rn.Namespace}
	for _, pg := range []*testcontainers.PostgresDB{e.a, e.b} {
		if err := pg.DB.AutoMigrate(&shelfItem{}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// cache returns a new Cache on the namespace, as another process has.
func (e *ownershipEnv) cache(t *testing.T) *cacheaside.Cache {
	t.Helper()
	c, err := cacheaside.New(e.rdb, &cacheaside.Options{Namespace: e.ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (e *ownershipEnv) registry(t *testing.T) map[string]string {
	t.Helper()
	m, err := e.rdb.HGetAll(context.Background(), e.ns+":owners").Result()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// keys lists the namespace's keys, on every master of a Cluster.
func (e *ownershipEnv) keys(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var all []string
	scan := func(ctx context.Context, c *redis.Client) error {
		ks, err := scanAll(ctx, c, e.ns+":*")
		mu.Lock()
		all = append(all, ks...)
		mu.Unlock()
		return err
	}
	var err error
	if cc, ok := e.rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, scan)
	} else {
		err = scan(ctx, e.rdb.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	// The Cache's epoch marker is the Cache's own (cacheaside.New learns
	// or writes it in the background, whenever it gets to it), not a
	// repository's.
	all = slices.DeleteFunc(all, func(k string) bool { return k == e.ns+":epoch" })
	slices.Sort(all)
	return all
}

func scanAll(ctx context.Context, c *redis.Client, match string) ([]string, error) {
	var out []string
	iter := c.Scan(ctx, 0, match, 100).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

func TestNew_namespaceCollision(t *testing.T) {
	t.Parallel()
	testCollision(t, newOwnershipEnv(t, testcontainers.Redis(t)))
}

func TestNew_namespaceCollision_cluster(t *testing.T) {
	t.Parallel()
	testCollision(t, newOwnershipEnv(t, testcontainers.RedisCluster(t)))
}

// Two services' databases with a same-named table on one namespace: the
// second New fails and writes nothing; another instance of the first
// service, a distinct Name, OwnershipShared and OwnershipTakeOver pass.
func testCollision(t *testing.T, e *ownershipEnv) {
	a, err := repo.New[shelfItem, int64](e.a.DB, e.cache(t), &repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Claim(); err != nil {
		t.Fatalf("Claim = %v", err)
	}
	before, keys := e.registry(t), e.keys(t)
	if len(before) != 1 || !strings.Contains(before["shelf_items"], e.a.Name) {
		t.Fatalf("registry after the first New: %v", before)
	}

	_, err = repo.New[shelfItem, int64](e.b.DB, e.cache(t), &repo.Options{Filter: &bloom.Options{Namespace: e.ns, Capacity: 1000, FalsePositiveRate: 0.01}})
	if !errors.Is(err, repo.ErrNamespaceCollision) {
		t.Fatalf("New on another database = %v, want ErrNamespaceCollision", err)
	}
	for _, want := range []string{`"shelf_items"`, `"` + e.ns + `"`, "database " + e.a.Name + " table public.shelf_items", "database " + e.b.Name + " ", "Options.Name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after := e.registry(t); !maps.Equal(after, before) {
		t.Fatalf("registry changed by the failed New: %v, was %v", after, before)
	}
	if after := e.keys(t); !slices.Equal(after, keys) {
		t.Fatalf("keys after the failed New: %v, were %v", after, keys)
	}

	// Another instance of the first service (or a restart): fine.
	if _, err := repo.New[shelfItem, int64](e.a.DB, e.cache(t), &repo.Options{}); err != nil {
		t.Fatalf("New on the same database again = %v", err)
	}
	// The second service under its own name: fine.
	if _, err := repo.New[shelfItem, int64](e.b.DB, e.cache(t), &repo.Options{Name: "b_shelf_items"}); err != nil {
		t.Fatalf("New with a distinct Name = %v", err)
	}
	// Shared on purpose: no check, no claim.
	if _, err := repo.New[shelfItem, int64](e.b.DB, e.cache(t), &repo.Options{Ownership: repo.OwnershipShared}); err != nil {
		t.Fatalf("New with OwnershipShared = %v", err)
	}
	if got := e.registry(t)["shelf_items"]; got != before["shelf_items"] {
		t.Fatalf("OwnershipShared claimed the name: %q", got)
	}
	// Taken over (the service moved to database b): b owns it now, and a
	// repository over a is the collision.
	if _, err := repo.New[shelfItem, int64](e.b.DB, e.cache(t), &repo.Options{Ownership: repo.OwnershipTakeOver}); err != nil {
		t.Fatalf("New with OwnershipTakeOver = %v", err)
	}
	if got := e.registry(t)["shelf_items"]; !strings.Contains(got, "database "+e.b.Name+" ") {
		t.Fatalf("registry after the take-over: %q", got)
	}
	if _, err := repo.New[shelfItem, int64](e.a.DB, e.cache(t), &repo.Options{}); !errors.Is(err, repo.ErrNamespaceCollision) {
		t.Fatalf("New on the old database after the take-over = %v, want ErrNamespaceCollision", err)
	}
}

// A column added to the model (a rolling deploy) keeps the owner: New
// passes, and the registry records the newer model.
func TestNew_ownershipModelChanged(t *testing.T) {
	t.Parallel()
	e := newOwnershipEnv(t, testcontainers.Redis(t))
	if _, err := repo.New[shelfItem, int64](e.a.DB, e.cache(t), &repo.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := e.a.DB.AutoMigrate(&shelfItemV2{}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.New[shelfItemV2, int64](e.a.DB, e.cache(t), &repo.Options{}); err != nil {
		t.Fatalf("New with a column added = %v", err)
	}
	if got := e.registry(t)["shelf_items"]; !strings.Contains(got, "colour string") {
		t.Fatalf("registry after the model changed: %q", got)
	}
	// An old instance restarting mid-deploy is still the same owner.
	if _, err := repo.New[shelfItem, int64](e.a.DB, e.cache(t), &repo.Options{}); err != nil {
		t.Fatalf("New with the older model = %v", err)
	}
}

// A value in the registry that asidekit did not write is another owner.
func TestNew_ownershipForeignRecord(t *testing.T) {
	t.Parallel()
	e := newOwnershipEnv(t, testcontainers.Redis(t))
	if err := e.rdb.HSet(context.Background(), e.ns+":owners", "shelf_items", "billing-service").Err(); err != nil {
		t.Fatal(err)
	}
	_, err := repo.New[shelfItem, int64](e.a.DB, e.cache(t), &repo.Options{})
	if !errors.Is(err, repo.ErrNamespaceCollision) || !strings.Contains(err.Error(), "belongs to billing-service") {
		t.Fatalf("New = %v, want ErrNamespaceCollision naming billing-service", err)
	}
}

// Redis unreachable at New: New fails open, and Claim says why the owner
// was not checked.
func TestNew_ownershipRedisDown(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: connections are refused
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	cache, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: "down"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	r, err := repo.New[shelfItem, int64](pg.DB, cache, &repo.Options{})
	if err != nil {
		t.Fatalf("New with Redis down = %v", err)
	}
	if err := r.Claim(); !errors.Is(err, repo.ErrOwnershipUnchecked) {
		t.Fatalf("Claim = %v, want ErrOwnershipUnchecked", err)
	}
}
