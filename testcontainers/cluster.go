package testcontainers

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// startRedisClusterBinaries starts three redis-server nodes in cluster mode
// and joins them into one cluster of three masters.
func startRedisClusterBinaries() ([]string, error) {
	var nodes []*RedisServer
	for i := 0; i < 3; i++ {
		s, err := startRedisServerOn(freeClusterPort, "--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		if err != nil {
			for _, n := range nodes {
				n.remove()
			}
			return nil, err
		}
		nodes = append(nodes, s)
	}
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	if err := joinCluster(addrs, addrs); err != nil {
		for _, n := range nodes {
			n.remove()
		}
		return nil, err
	}
	return addrs, nil
}

// joinCluster makes one cluster of the nodes at addrs, dialled from here;
// meet holds the same nodes' addresses as the nodes see each other.
// Slots are split evenly, each node a master.
func joinCluster(addrs, meet []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a})
		defer clients[i].Close()
	}
	for i := 1; i < len(meet); i++ {
		host, port, _ := strings.Cut(meet[i], ":")
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
			return fmt.Errorf("cluster meet %s: %w", meet[i], err)
		}
	}
	per := clusterSlots / len(addrs)
	for i, c := range clients {
		lo, hi := i*per, (i+1)*per-1
		if i == len(clients)-1 {
			hi = clusterSlots - 1
		}
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("cluster addslotsrange on %s: %w", addrs[i], err)
		}
	}
	want := "cluster_known_nodes:" + strconv.Itoa(len(addrs))
	for {
		ready := true
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, want) {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster did not converge: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
