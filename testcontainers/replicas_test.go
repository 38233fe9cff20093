package testcontainers

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The cluster starts with a replica per master, a write reaches the
// master of its key, and a takeover makes the replica that master, as the
// cluster client then sees it.
func TestReplicatedCluster_takeover(t *testing.T) {
	// A guard, not a measure: six servers start and a replica takes over
	// well within it, also on a loaded machine (one minute was not).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rc := NewReplicatedCluster(t)
	if len(rc.Nodes) != 6 || len(rc.Addrs) != 6 {
		t.Fatalf("%d nodes, %d addrs", len(rc.Nodes), len(rc.Addrs))
	}
	for i := 0; i < 3; i++ {
		r, err := rc.ReplicaOf(ctx, rc.Nodes[i])
		if err != nil || r != rc.Nodes[i+3] {
			t.Fatalf("replica of node %d = %v, %v; want node %d", i, r, err, i+3)
		}
	}
	c := rc.NewClient(t)
	if err := c.Set(ctx, "{k}", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master, err := rc.MasterOf(ctx, "{k}")
	if err != nil {
		t.Fatal(err)
	}
	replica, err := rc.ReplicaOf(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	if err := replica.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Resume(); err != nil {
		t.Fatal(err)
	}
	master.Kill()
	if err := rc.Takeover(ctx, replica); err != nil {
		t.Fatal(err)
	}
	if now, err := rc.MasterOf(ctx, "{k}"); err != nil || now != replica {
		t.Fatalf("master after the takeover = %v, %v; want %s", now, err, replica.Addr)
	}
	c.ReloadState(ctx)
	// The client reaches the promoted replica (which may or may not have
	// had time to receive the key: replication is asynchronous).
	if err := poll(ctx, func() error {
		if err := c.Get(ctx, "{k}").Err(); err != redis.Nil {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("the key's slot on the promoted replica: %v", err)
	}
}
