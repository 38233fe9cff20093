package testcontainers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplicatedCluster is a Redis Cluster of three masters, each with one
// replica, started from the redis-server binary on PATH on free loopback
// ports for one test (never from the environment or Docker: its tests kill,
// pause and promote nodes). Its nodes are removed at the end of the test.
//
// The nodes run with cluster-replica-validity-factor 0 (a replica may be
// promoted however long it was cut from its master) and replica migration
// off, so that which node replicates which stays as the test made it, and
// with no delay before a full sync.
type ReplicatedCluster struct {
	// Nodes are the six nodes; at start Nodes[i+3] replicates Nodes[i].
	Nodes []*RedisServer
	// Addrs are the seed addresses of all six nodes.
	Addrs []string
}

// NewReplicatedCluster starts a 3-master + 3-replica Redis Cluster from
// PATH and waits until every replica is in sync with its master and every
// node sees the cluster as ok. The test fails if redis-server is not on
// PATH or the cluster does not form within 30 seconds.
func NewReplicatedCluster(t testing.TB) *ReplicatedCluster {
	t.Helper()
	rc, err := StartReplicatedCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// StartReplicatedCluster is NewReplicatedCluster for a program that is not
// a test (asidebench, asidechaos): the caller removes the nodes with
// Close. The error wraps the cause when redis-server is not on PATH or the
// cluster does not form within 30 seconds.
func StartReplicatedCluster() (*ReplicatedCluster, error) {
	rc := &ReplicatedCluster{}
	fail := func(err error) (*ReplicatedCluster, error) {
		for _, n := range rc.Nodes {
			n.remove()
		}
		return nil, err
	}
	for i := 0; i < 6; i++ {
		s, err := startRedisServerOn(freeClusterPort, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
			"--cluster-replica-validity-factor", "0", "--cluster-allow-replica-migration", "no",
			"--repl-diskless-sync-delay", "0") // a replica syncs at once, not after 5 s
		if err != nil {
			return fail(err)
		}
		rc.Nodes = append(rc.Nodes, s)
		rc.Addrs = append(rc.Addrs, s.Addr)
	}
	if err := joinCluster(rc.Addrs[:3], rc.Addrs[:3]); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := rc.AddReplica(ctx, rc.Nodes[i+3], rc.Nodes[i]); err != nil {
			return fail(err)
		}
	}
	if err := rc.waitOK(ctx); err != nil {
		return fail(err)
	}
	return rc, nil
}

// Close stops every node (paused ones too) and removes its files.
func (rc *ReplicatedCluster) Close() {
	for _, n := range rc.Nodes {
		_ = n.Resume() // a paused server would ignore SIGTERM
		n.remove()
	}
}

// NewClient returns a cluster client seeded with every node, closed at
// cleanup.
func (rc *ReplicatedCluster) NewClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// AddReplica makes node (a running node that holds no slots, known to the
// cluster or not) a replica of master and waits until it is in sync.
func (rc *ReplicatedCluster) AddReplica(ctx context.Context, node, master *RedisServer) error {
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	nc := redis.NewClient(&redis.Options{Addr: node.Addr})
	defer nc.Close()
	host, port, _ := strings.Cut(node.Addr, ":")
	if err := mc.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		return fmt.Errorf("cluster meet %s: %w", node.Addr, err)
	}
	id, err := mc.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return err
	}
	// The node must know the master before it can replicate it.
	if err := poll(ctx, func() error {
		return nc.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
	}); err != nil {
		return fmt.Errorf("%s replicate %s: %w", node.Addr, master.Addr, err)
	}
	return poll(ctx, func() error {
		info, err := nc.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "master_link_status:up") || !strings.Contains(info, "master_sync_in_progress:0") {
			return errors.New("replica not in sync yet")
		}
		return nil
	})
}

// MasterOf returns the live node that serves key's slot as master now, by
// its own account (ROLE and the slots of the "myself" line of CLUSTER
// NODES).
func (rc *ReplicatedCluster) MasterOf(ctx context.Context, key string) (*RedisServer, error) {
	for _, n := range rc.Nodes {
		if n.p == nil || n.p.exited() {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		slot, err := c.ClusterKeySlot(ctx, key).Result()
		var ranges []string
		if err == nil {
			ranges, err = mySlots(ctx, c)
		}
		_ = c.Close()
		if err != nil {
			continue
		}
		for _, r := range ranges {
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			a, errA := strconv.ParseInt(lo, 10, 64)
			b, errB := strconv.ParseInt(hi, 10, 64)
			if errA == nil && errB == nil && a <= slot && slot <= b {
				return n, nil
			}
		}
	}
	return nil, fmt.Errorf("no live master serves the slot of %q", key)
}

// mySlots returns the slot ranges ("lo-hi" or "n") the node at c serves,
// or none if it is not a master.
func mySlots(ctx context.Context, c *redis.Client) ([]string, error) {
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return nil, err
	}
	if len(role) == 0 || role[0] != "master" {
		return nil, nil
	}
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) > 8 && strings.Contains(f[2], "myself") {
			return f[8:], nil
		}
	}
	return nil, nil
}

// ReplicaOf returns the node that replicates master now.
func (rc *ReplicatedCluster) ReplicaOf(ctx context.Context, master *RedisServer) (*RedisServer, error) {
	for _, n := range rc.Nodes {
		if n == master || n.p == nil || n.p.exited() {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		role, err := c.Do(ctx, "ROLE").Slice()
		_ = c.Close()
		if err != nil || len(role) < 3 || role[0] != "slave" {
			continue
		}
		if fmt.Sprintf("%v:%v", role[1], role[2]) == master.Addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no live replica of %s", master.Addr)
}

// Takeover promotes replica with CLUSTER FAILOVER TAKEOVER (no agreement
// of its master or of the other masters needed: the master may be dead or
// paused) and waits until the replica reports itself master with slots.
func (rc *ReplicatedCluster) Takeover(ctx context.Context, replica *RedisServer) error {
	c := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer c.Close()
	if err := c.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		return fmt.Errorf("cluster failover takeover on %s: %w", replica.Addr, err)
	}
	return poll(ctx, func() error {
		slots, err := mySlots(ctx, c)
		if err != nil {
			return err
		}
		if len(slots) == 0 {
			return fmt.Errorf("%s is not a master with slots yet", replica.Addr)
		}
		return nil
	})
}

// waitOK waits until every live node reports cluster_state:ok.
func (rc *ReplicatedCluster) waitOK(ctx context.Context) error {
	return poll(ctx, func() error {
		for _, n := range rc.Nodes {
			if n.p == nil || n.p.exited() {
				continue
			}
			c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
			info, err := c.ClusterInfo(ctx).Result()
			_ = c.Close()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: cluster not ok", n.Addr)
			}
		}
		return nil
	})
}

// Pause stops the server's process with SIGSTOP: it keeps its connections
// open but answers nothing (a replica so paused acknowledges no write)
// until Resume.
func (s *RedisServer) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *RedisServer) Resume() error { return s.signal(syscall.SIGCONT) }

// Kill ends the server with SIGKILL, as a crash would, waits for it to exit
// and removes its files; Start starts it again, empty and (in a cluster)
// with a new node identity.
func (s *RedisServer) Kill() {
	if s.p == nil {
		return
	}
	_ = s.p.cmd.Process.Kill()
	<-s.p.done
	s.p.Stop()
}

func (s *RedisServer) signal(sig syscall.Signal) error {
	if s.p == nil || s.p.exited() {
		return fmt.Errorf("%s is not running", s.Addr)
	}
	return s.p.cmd.Process.Signal(sig)
}

// poll calls check every 20 ms until it returns nil or ctx ends.
func poll(ctx context.Context, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
