package testcontainers

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { Main(m) }

// binaryPostgres starts (once) a PostgreSQL from PATH for the tests that
// need one whatever the environment says.
var binaryPG resolved[string]

func binaryPostgres(t *testing.T) string {
	t.Helper()
	dsn, _, err := binaryPG.get(func() (string, Source, error) {
		dsn, err := startPostgresBinary()
		return dsn, SourceBinary, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

func TestPostgres_envComesFirst(t *testing.T) {
	dsn := os.Getenv(EnvPostgresDSN)
	if dsn == "" {
		dsn = binaryPostgres(t)
	}
	t.Setenv(EnvPostgresDSN, dsn)
	got, src, err := findPostgres()
	if err != nil {
		t.Fatal(err)
	}
	if src != SourceEnv || got != dsn {
		t.Fatalf("findPostgres = %q, %s; want %q, env", got, src, dsn)
	}
	db, err := newDatabase(t, got)
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := db.DB.Raw("SELECT 1").Scan(&one).Error; err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
}

func TestRedis_envComesFirst(t *testing.T) {
	addr := os.Getenv(EnvRedisAddr)
	if addr == "" {
		s := NewRedisServer(t)
		addr = s.Addr
	}
	t.Setenv(EnvRedisAddr, addr)
	got, src, err := findRedis()
	if err != nil {
		t.Fatal(err)
	}
	if src != SourceEnv || got[0] != addr {
		t.Fatalf("findRedis = %v, %s; want %s, env", got, src, addr)
	}
	r := newNamespace(t, got, false, src)
	if err := r.Client.Set(context.Background(), r.Namespace+":k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestBinaries_startFromPath(t *testing.T) {
	t.Setenv(EnvPostgresDSN, "")
	t.Setenv(EnvRedisAddr, "")
	ctx := context.Background()

	s, err := startRedisServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.remove) // registered first, so it runs after the namespace cleanup
	r := newNamespace(t, []string{s.Addr}, false, SourceBinary)
	if err := r.Client.Set(ctx, r.Namespace+":k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	db, err := newDatabase(t, binaryPostgres(t))
	if err != nil {
		t.Fatal(err)
	}
	var version string
	if err := db.DB.Raw("SHOW server_version").Scan(&version).Error; err != nil || version == "" {
		t.Fatalf("server_version = %q, %v", version, err)
	}
}

func TestRedisServer_stopAndStart(t *testing.T) {
	s := NewRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping succeeded on a stopped server")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
}

func TestRedisCluster_keyLandsOnSlotOwner(t *testing.T) {
	r := RedisCluster(t)
	ctx := context.Background()
	cc := r.Client.(*redis.ClusterClient)
	shards, err := cc.ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	type master struct {
		addr   string
		lo, hi int64
	}
	var masters []master
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if n.Role != "master" {
				continue
			}
			for _, sl := range sh.Slots {
				masters = append(masters, master{fmt.Sprintf("%s:%d", n.IP, n.Port), sl.Start, sl.End})
			}
		}
	}
	if len(masters) != 3 {
		t.Fatalf("cluster has %d slot ranges on masters, want 3", len(masters))
	}
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("%s:{k%d}", r.Namespace, i)
		if err := cc.Set(ctx, key, i, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		slot, err := cc.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range masters {
			node := redis.NewClient(&redis.Options{Addr: m.addr})
			v, err := node.Get(ctx, key).Int()
			node.Close()
			if m.lo <= slot && slot <= m.hi {
				if err != nil || v != i {
					t.Fatalf("owner %s: GET %s = %d, %v", m.addr, key, v, err)
				}
			} else if err == nil || !strings.HasPrefix(err.Error(), "MOVED") {
				t.Fatalf("non-owner %s: GET %s = %d, %v; want MOVED", m.addr, key, v, err)
			}
		}
	}
}

func TestDocker_postgresAndRedis(t *testing.T) {
	if err := dockerAvailable(); err != nil {
		t.Skipf("skipping the Docker path: %v", err)
	}
	dsn, err := docker.startPostgres()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newDatabase(t, dsn); err != nil {
		t.Fatal(err)
	}
	addr, err := docker.startRedis()
	if err != nil {
		t.Fatal(err)
	}
	if err := pingRedis(addr); err != nil {
		t.Fatal(err)
	}
}

func TestNoBackend_namesAllThreeWays(t *testing.T) {
	err := noBackend("Redis", EnvRedisAddr, "redis-server", []string{"x"})
	for _, want := range []string{EnvRedisAddr, "Docker", "redis-server", "PATH"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

func TestDeleteNamespace_leavesOtherKeys(t *testing.T) {
	a, b := Redis(t), Redis(t)
	ctx := context.Background()
	for i := 0; i < 1200; i++ {
		a.Client.Set(ctx, fmt.Sprintf("%s:%d", a.Namespace, i), i, time.Minute)
	}
	b.Client.Set(ctx, b.Namespace+":keep", 1, time.Minute)
	if err := DeleteNamespace(ctx, a.Client, a.Namespace); err != nil {
		t.Fatal(err)
	}
	if n, _ := a.Client.Keys(ctx, a.Namespace+"*").Result(); len(n) != 0 {
		t.Fatalf("%d keys left in %s", len(n), a.Namespace)
	}
	if err := b.Client.Get(ctx, b.Namespace+":keep").Err(); err != nil {
		t.Fatalf("other namespace lost its key: %v", err)
	}
}

func TestWithDatabase(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h:5/old?sslmode=disable": "postgres://u@h:5/new?sslmode=disable",
		"host=h dbname=old user=u":             "host=h dbname=new user=u",
		"host=h user=u":                        "host=h user=u dbname=new",
	} {
		got, err := withDatabase(in, "new")
		if err != nil || got != want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := withDatabase(" ", "x"); err == nil {
		t.Error("empty DSN accepted")
	}
}

// The Examples' helpers resolve the same servers as the tests.
func TestExampleServers(t *testing.T) {
	addr, err := RedisAddr()
	if err != nil {
		t.Fatal(err)
	}
	if r := Redis(t); r.Addrs[0] != addr {
		t.Errorf("RedisAddr = %s, Redis(t) uses %s", addr, r.Addrs[0])
	}
	dsn, err := PostgresDSN()
	if err != nil {
		t.Fatal(err)
	}
	if err := pingPostgres(dsn); err != nil {
		t.Errorf("PostgresDSN %s does not answer: %v", dsn, err)
	}
}
