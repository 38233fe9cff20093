package testcontainers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CutReplica makes replica miss every write master acknowledges from now
// on, without a race: replica is paused (SIGSTOP), master's replication
// links are killed (so the paused replica cannot read what was already
// sent, nor reconnect), and CutReplica returns once master counts no
// replica. Resume the replica to promote it (Takeover) after master's
// death: it has master's writes up to the cut and none after.
func (rc *ReplicatedCluster) CutReplica(ctx context.Context, master, replica *RedisServer) error {
	if err := replica.Pause(); err != nil {
		return err
	}
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	if err := mc.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		return fmt.Errorf("client kill type replica on %s: %w", master.Addr, err)
	}
	return poll(ctx, func() error {
		info, err := mc.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "connected_slaves:0") {
			return errors.New("a replica is still connected")
		}
		return nil
	})
}

// WaitInSync waits until replica has processed every write master had
// when WaitInSync was called.
func (rc *ReplicatedCluster) WaitInSync(ctx context.Context, master, replica *RedisServer) error {
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	rcl := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rcl.Close()
	want, err := replOffset(ctx, mc, "master_repl_offset")
	if err != nil {
		return err
	}
	return poll(ctx, func() error {
		got, err := replOffset(ctx, rcl, "slave_repl_offset")
		if err != nil {
			return err
		}
		if got < want {
			return fmt.Errorf("%s: offset %d < %d", replica.Addr, got, want)
		}
		return nil
	})
}

func replOffset(ctx context.Context, c *redis.Client, field string) (int64, error) {
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in INFO replication", field)
}

// KeyOn returns a key whose slot node serves as master now, to probe the
// routing of a cluster client after a failover.
func (rc *ReplicatedCluster) KeyOn(ctx context.Context, node *RedisServer) (string, error) {
	for i := 0; i < 10_000; i++ {
		k := "probe" + strconv.Itoa(i)
		m, err := rc.MasterOf(ctx, k)
		if err != nil {
			return "", err
		}
		if m == node {
			return k, nil
		}
	}
	return "", fmt.Errorf("no key found on %s", node.Addr)
}

// WaitRouted reloads client's view of the cluster and waits until it
// reaches the master of key (a GET answers, with a value or nil): the
// client has learned of a failover, as go-redis does by itself on a
// MOVED reply or within its periodic reload.
func WaitRouted(ctx context.Context, client *redis.ClusterClient, key string) error {
	client.ReloadState(ctx)
	return poll(ctx, func() error {
		if err := client.Get(ctx, key).Err(); err != nil && err != redis.Nil {
			client.ReloadState(ctx)
			return err
		}
		return nil
	})
}

// Views describes how each live node sees the cluster: its role, its
// cluster_state and, per node it knows, the address, flags and slots of
// its CLUSTER NODES line. For a test's failure message after a failover.
func (rc *ReplicatedCluster) Views(ctx context.Context) string {
	var b strings.Builder
	for _, n := range rc.Nodes {
		if n.p == nil || n.p.exited() {
			fmt.Fprintf(&b, "%s: not running\n", n.Addr)
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		role, err := c.Do(ctx, "ROLE").Slice()
		var info, nodes string
		if err == nil {
			info, err = c.ClusterInfo(ctx).Result()
		}
		if err == nil {
			nodes, err = c.ClusterNodes(ctx).Result()
		}
		_ = c.Close()
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", n.Addr, err)
			continue
		}
		_, state, _ := strings.Cut(info, "cluster_state:")
		state, _, _ = strings.Cut(state, "\r\n")
		fmt.Fprintf(&b, "%s: role %v, cluster_state %s, sees:", n.Addr, role[0], state)
		for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
			f := strings.Fields(line)
			if len(f) < 8 {
				continue
			}
			addr, _, _ := strings.Cut(f[1], "@")
			fmt.Fprintf(&b, " [%s %s %s]", addr, f[2], strings.Join(f[8:], ","))
		}
		b.WriteString("\n")
	}
	return b.String()
}
