package cacheaside

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/topology"
	"github.com/asidekit/asidekit/testcontainers"
)

// simulatedTopology replaces clusterMasters, for the test's duration, by a
// listing of the real cluster's masters restricted to those named by set.
// Moving a master in and out of the listing stands in for a topology
// change (slots moved to a new node, a failover): the feeds connect to
// the real nodes, so what is tracked is real; only the discovery is
// simulated, which keeps the shared cluster intact (TestLocal_clusterReshard
// makes a real change on a private cluster).
type simulatedTopology struct {
	mu    sync.Mutex
	shown map[string]bool
}

func simulateTopology(t *testing.T) *simulatedTopology {
	s := &simulatedTopology{shown: map[string]bool{}}
	real := clusterMasters
	clusterMasters = func(ctx context.Context, topo topology.Topology) (map[string]*redis.Options, error) {
		all, err := real(ctx, topo)
		s.mu.Lock()
		defer s.mu.Unlock()
		for addr := range all {
			if !s.shown[addr] {
				delete(all, addr)
			}
		}
		return all, err
	}
	t.Cleanup(func() { clusterMasters = real })
	return s
}

func (s *simulatedTopology) show(addr string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shown[addr] = on
}

// nearConns counts the near cache connections of namespace ns on node.
func nearConns(t *testing.T, node *redis.Client, ns string) int {
	t.Helper()
	list, err := node.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(list, " name="+ns+":near ")
}

// On a Cluster, the tracking feeds follow the topology: a master that
// appears is tracked from then on, the near caches flushed in between (a
// change made on it untracked is not served); a master that disappears
// has its connection closed and the near caches flushed.
func TestLocal_clusterTopology(t *testing.T) {
	r := testcontainers.RedisCluster(t)
	cl := r.Client.(*redis.ClusterClient)
	ctx := context.Background()
	nodes := map[string]*redis.Client{}
	var mu sync.Mutex
	err := cl.ForEachMaster(ctx, func(_ context.Context, node *redis.Client) error {
		mu.Lock() // ForEachMaster runs fn concurrently
		defer mu.Unlock()
		nodes[node.Options().Addr] = node
		return nil
	})
	if err != nil || len(nodes) < 2 {
		t.Fatalf("masters: %d, %v", len(nodes), err)
	}

	topo := simulateTopology(t)
	src := newDB()
	// The reader's first key lives on the master left out at first.
	rc := newCache(t, r.NewClient(t), r.Namespace, nil)
	reader := newEntity[user](t, rc, "user", Policy{Local: &LocalPolicy{TTL: time.Hour}})
	var late, id string
	for i := 0; late == ""; i++ {
		id = strconv.Itoa(i)
		key, _ := reader.Key(id)
		m, err := cl.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		late = m.Options().Addr
	}
	var first string
	for addr := range nodes {
		topo.show(addr, addr != late)
		if addr != late && first == "" {
			first = addr
		}
	}
	waitLocal(t, rc)
	key, _ := reader.Key(id)

	// Untracked master: a plain DEL there is not heard of.
	warm(t, reader, id, src.load)
	src.bump(id)
	if err := r.Client.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := reader.Get(ctx, id, src.load); err != nil || v.Ver != 0 {
		t.Fatalf("untracked master: %+v, %v; want the old version 0 from the near cache", v, err)
	}

	// It appears: flushed, then tracked.
	flushes := reader.Stats().LocalFlushes
	topo.show(late, true)
	waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalFlushes > flushes })
	waitLocal(t, rc)
	if n := nearConns(t, nodes[late], r.Namespace); n != 1 {
		t.Errorf("%d near cache connections on the new master, want 1", n)
	}
	if v, err := reader.Get(ctx, id, src.load); err != nil || v.Ver != 1 {
		t.Fatalf("after the new master was found: %+v, %v; want version 1", v, err)
	}
	warm(t, reader, id, src.load)
	ver := src.bump(id)
	if err := r.Client.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		v, err := reader.Get(ctx, id, src.load)
		return err == nil && v.Ver == ver
	})

	// Another disappears: its connection closed, the tiers flushed.
	warm(t, reader, id, src.load)
	flushes = reader.Stats().LocalFlushes
	topo.show(first, false)
	waitFor(t, 10*time.Second, func() bool { return reader.Stats().LocalFlushes > flushes })
	waitFor(t, 10*time.Second, func() bool { return nearConns(t, nodes[first], r.Namespace) == 0 })
	waitLocal(t, rc)
	if n := nearConns(t, nodes[late], r.Namespace); n != 1 {
		t.Errorf("%d near cache connections on the remaining master, want 1", n)
	}
}
