package testcontainers

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisNamespace is a Redis backend with a key namespace that belongs to one
// test.
type RedisNamespace struct {
	// Client is a client of the resolved server or cluster, closed at cleanup.
	Client redis.UniversalClient
	// Namespace is unique to this test; every key the test writes should
	// start with it. Its keys are removed at cleanup.
	Namespace string
	// Addrs are the server's address, or the cluster's seed addresses.
	Addrs []string
	// Cluster is true for a Redis Cluster.
	Cluster bool
	// Source says how the server was found.
	Source Source
}

// NewClient returns another client of the same backend, as a separate
// process would have, closed at cleanup.
func (r *RedisNamespace) NewClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	c := newUniversalClient(r.Addrs, r.Cluster)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var (
	redisServer  resolved[[]string]
	redisCluster resolved[[]string]
)

func findRedis() ([]string, Source, error) {
	if addr := os.Getenv(EnvRedisAddr); addr != "" {
		return []string{addr}, SourceEnv, nil
	}
	var reasons []string
	if err := dockerAvailable(); err == nil {
		addr, err := docker.startRedis()
		if err == nil {
			return []string{addr}, SourceDocker, nil
		}
		reasons = append(reasons, "docker: "+err.Error())
	} else {
		reasons = append(reasons, err.Error())
	}
	s, err := startRedisServer()
	if err == nil {
		return []string{s.Addr}, SourceBinary, nil
	}
	reasons = append(reasons, err.Error())
	return nil, "", noBackend("Redis", EnvRedisAddr, "redis-server", reasons)
}

func findRedisCluster() ([]string, Source, error) {
	if addrs := envList(EnvRedisClusterAddrs); len(addrs) > 0 {
		return addrs, SourceEnv, nil
	}
	var reasons []string
	if err := dockerAvailable(); err == nil {
		addrs, err := docker.startRedisCluster()
		if err == nil {
			return addrs, SourceDocker, nil
		}
		reasons = append(reasons, "docker: "+err.Error())
	} else {
		reasons = append(reasons, err.Error())
	}
	addrs, err := startRedisClusterBinaries()
	if err == nil {
		return addrs, SourceBinary, nil
	}
	reasons = append(reasons, err.Error())
	return nil, "", noBackend("Redis Cluster", EnvRedisClusterAddrs, "redis-server", reasons)
}

// Redis returns a client of the resolved standalone Redis and a key
// namespace for this test.
func Redis(t testing.TB) *RedisNamespace {
	t.Helper()
	addrs, src, err := redisServer.get(findRedis)
	if err != nil {
		fatal(t, err)
	}
	return newNamespace(t, addrs, false, src)
}

// RedisCluster returns a cluster client of the resolved 3-master Redis
// Cluster and a key namespace for this test.
func RedisCluster(t testing.TB) *RedisNamespace {
	t.Helper()
	addrs, src, err := redisCluster.get(findRedisCluster)
	if err != nil {
		fatal(t, err)
	}
	return newNamespace(t, addrs, true, src)
}

func newUniversalClient(addrs []string, cluster bool) redis.UniversalClient {
	if cluster {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	}
	return redis.NewClient(&redis.Options{Addr: addrs[0]})
}

func newNamespace(t testing.TB, addrs []string, cluster bool, src Source) *RedisNamespace {
	t.Helper()
	r := &RedisNamespace{
		Client:    newUniversalClient(addrs, cluster),
		Namespace: uniqueName("t"),
		Addrs:     addrs,
		Cluster:   cluster,
		Source:    src,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Client.Ping(ctx).Err(); err != nil {
		_ = r.Client.Close()
		fatal(t, fmt.Errorf("testcontainers: redis %v (%s) does not answer: %w", addrs, src, err))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := DeleteNamespace(ctx, r.Client, r.Namespace); err != nil {
			t.Logf("testcontainers: clean namespace %s: %v", r.Namespace, err)
		}
		_ = r.Client.Close()
	})
	return r
}

// DeleteNamespace removes every key that starts with ns, with SCAN and
// UNLINK on each master. It never flushes a server.
func DeleteNamespace(ctx context.Context, c redis.UniversalClient, ns string) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return deleteOnNode(ctx, node, ns)
		})
	}
	return deleteOnNode(ctx, c, ns)
}

func deleteOnNode(ctx context.Context, c redis.Cmdable, ns string) error {
	iter := c.Scan(ctx, 0, ns+"*", 500).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		// One UNLINK per key: on a cluster node the keys of a batch may
		// sit in different slots.
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.Unlink(ctx, k)
			}
			return nil
		})
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}
