package cacheaside

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterNode starts a redis-server of its own in cluster mode (a private
// cluster: the shared one is not resharded) and returns a client of it.
// The test is skipped without a redis-server binary on PATH. A server that
// exits before it answers (its port, or its bus port, taken by another
// test between the pick and the start) is started again on another port.
func clusterNode(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server on PATH for a private cluster")
	}
	for try := 1; ; try++ {
		if c := startClusterNode(t, bin); c != nil {
			return c
		}
		if try == 5 {
			t.Fatal("no private cluster node answered in 5 starts")
		}
	}
}

// startClusterNode starts one cluster-mode redis-server on a free port and
// waits until it answers (its client) or exits (nil).
func startClusterNode(t *testing.T, bin string) *redis.Client {
	t.Helper()
	var port int
	for port == 0 || port > 55000 { // the cluster bus listens on port + 10000
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", t.TempDir(),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000",
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	t.Cleanup(func() { _ = c.Close() })
	ready := func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		return c.Ping(context.Background()).Err() == nil
	}
	waitFor(t, 10*time.Second, ready)
	select {
	case <-exited:
		return nil
	default:
		return c
	}
}

func clusterInfoHas(c *redis.Client, want ...string) bool {
	info, err := c.ClusterInfo(context.Background()).Result()
	if err != nil {
		return false
	}
	for _, w := range want {
		if !strings.Contains(info, w) {
			return false
		}
	}
	return true
}

// moveSlot moves slot and its keys from src to dst (the steps of
// redis-cli --cluster reshard).
func moveSlot(t *testing.T, src, dst *redis.Client, slot int) {
	t.Helper()
	ctx := context.Background()
	srcID, err := src.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	dstID, err := dst.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err())
	keys, err := src.ClusterGetKeysInSlot(ctx, slot, 1000).Result()
	must(err)
	if len(keys) > 0 {
		host, port, _ := strings.Cut(dst.Options().Addr, ":")
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(src.Do(ctx, args...).Err())
	}
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err())
}

// privateCluster starts a cluster of two nodes of its own: a holds every
// slot, b none (a master with no slots, not listed by CLUSTER SLOTS).
func privateCluster(t *testing.T) (a, b *redis.Client) {
	t.Helper()
	a, b = clusterNode(t), clusterNode(t)
	ctx := context.Background()
	if err := a.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(b.Options().Addr, ":")
	if err := a.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, func() bool {
		return clusterInfoHas(a, "cluster_state:ok", "cluster_known_nodes:2") && clusterInfoHas(b, "cluster_state:ok", "cluster_known_nodes:2")
	})
	return a, b
}

// clusterClientOf returns a new ClusterClient seeded with node's address.
func clusterClientOf(t *testing.T, node *redis.Client) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{node.Options().Addr}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A real topology change: a master joins a private cluster and takes the
// slot of a cached key. The near cache tracks it from the next listing of
// the masters (flushing in between), so a plain DEL of the key on the new
// master reaches the reader. Before the feeds followed the topology, the
// new master was never tracked and the reader served the old value until
// Local.TTL (an hour here).
func TestLocal_clusterReshard(t *testing.T) {
	t.Parallel()
	a, b := privateCluster(t)
	ctx := context.Background()
	outside := clusterClientOf(t, a)
	ns := fmt.Sprintf("reshard%d", time.Now().UnixNano())
	src := newDB()
	rc := newCache(t, clusterClientOf(t, a), ns, nil)
	reader := newEntity[user](t, rc, "user", Policy{Local: &LocalPolicy{TTL: time.Hour}})
	waitLocal(t, rc)
	key, _ := reader.Key("1")
	warm(t, reader, "1", src.load)

	flushes := reader.Stats().LocalFlushes
	moveSlot(t, a, b, int(outside.ClusterKeySlot(ctx, key).Val()))
	warm(t, reader, "1", src.load) // now filled from the new master
	ver := src.bump("1")
	if err := outside.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		v, err := reader.Get(ctx, "1", src.load)
		return err == nil && v.Ver == ver
	})
	// The new master was found, and the tiers flushed when it was.
	waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalFlushes > flushes })
	waitLocal(t, rc)
	if n := nearConns(t, b, ns); n != 1 {
		t.Errorf("%d near cache connections on the new master, want 1", n)
	}
}

// LocalBroadcast on a Cluster: when the channel's slot moves, Redis ends
// the sharded subscription (sunsubscribe); the feed flushes and subscribes
// again on the slot's new owner, so later writes still reach the reader.
func TestLocal_broadcastReshard(t *testing.T) {
	t.Parallel()
	a, b := privateCluster(t)
	ctx := context.Background()
	ns := fmt.Sprintf("reshardb%d", time.Now().UnixNano())
	opts := &Options{LocalInvalidation: LocalBroadcast}
	src := newDB()
	rc := newCache(t, clusterClientOf(t, a), ns, opts)
	reader := newEntity[user](t, rc, "user", Policy{Local: &LocalPolicy{TTL: time.Hour}})
	wc := newCache(t, clusterClientOf(t, a), ns, opts)
	writer := newEntity[user](t, wc, "user", Policy{Local: &LocalPolicy{TTL: time.Hour}})
	waitLocal(t, rc)
	waitLocal(t, wc)
	warm(t, reader, "1", src.load)

	flushes := reader.Stats().LocalFlushes
	moveSlot(t, a, b, int(clusterClientOf(t, a).ClusterKeySlot(ctx, rc.near.channel()).Val()))
	waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalFlushes > flushes })
	waitLocal(t, rc)
	warm(t, reader, "1", src.load)
	ver := src.bump("1")
	if err := writer.Set(ctx, "1", user{ID: "1", Ver: ver}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		v, err := reader.Get(ctx, "1", src.load)
		return err == nil && v.Ver == ver
	})
}
