package topology

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestOf_kinds(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer func() { _ = ring.Close() }()
	single := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: time.Second, ContextTimeoutEnabled: true})
	defer func() { _ = single.Close() }()
	cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, DialTimeout: time.Second})
	defer func() { _ = cl.Close() }()

	for name, c := range map[string]struct {
		client redis.UniversalClient
		kind   Kind
	}{
		"client":  {single, Standalone},
		"cluster": {cl, Cluster},
		"ring":    {ring, Unsupported},
		"nil":     {nil, Unsupported},
	} {
		topo := Of(c.client)
		if got := topo.Kind(); got != c.kind {
			t.Errorf("%s: Kind = %d, want %d", name, got, c.kind)
		}
		_, ok := topo.Timeouts()
		if ok != (c.kind != Unsupported) {
			t.Errorf("%s: Timeouts ok = %v", name, ok)
		}
	}
	if to, _ := Of(single).Timeouts(); to.Read != time.Second || !to.ContextTimeoutEnabled {
		t.Errorf("client timeouts = %+v", to)
	}
	if to, _ := Of(cl).Timeouts(); to.Dial != time.Second || to.ContextTimeoutEnabled {
		t.Errorf("cluster timeouts = %+v", to)
	}
	if o := Of(single).NodeOptions(); o == nil || o.Addr != "127.0.0.1:1" || o == single.Options() {
		t.Errorf("NodeOptions = %p %+v, want a copy", o, o)
	}
	if Of(cl).NodeOptions() != nil || Of(ring).NodeOptions() != nil {
		t.Error("NodeOptions of a cluster or a ring is not nil")
	}
}

func TestOf_unsupported(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer func() { _ = ring.Close() }()
	topo := Of(ring)
	ctx := context.Background()
	if _, err := topo.Masters(ctx); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Masters: %v", err)
	}
	if _, err := topo.MasterForKey(ctx, "k"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("MasterForKey: %v", err)
	}
	called := false
	if err := topo.ForEachMaster(ctx, func(context.Context, *redis.Client) error { called = true; return nil }); !errors.Is(err, ErrUnsupported) || called {
		t.Errorf("ForEachMaster: %v, called %v", err, called)
	}
	topo.WatchNodes(ctx, func(*redis.Client) { called = true })
	if called {
		t.Error("WatchNodes called fn")
	}
}

func TestStandalone(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	topo := Of(r.Client)
	node := r.Client.(*redis.Client)
	masters, err := topo.Masters(ctx)
	if err != nil || len(masters) != 1 || masters[node.Options().Addr] != node {
		t.Fatalf("Masters = %v, %v; want the client itself", masters, err)
	}
	if m, err := topo.MasterForKey(ctx, "any"); err != nil || m != node {
		t.Fatalf("MasterForKey = %p, %v", m, err)
	}
	n := 0
	if err := topo.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error { n++; return nil }); err != nil || n != 1 {
		t.Fatalf("ForEachMaster: %d calls, %v", n, err)
	}
	var seen []*redis.Client
	topo.WatchNodes(ctx, func(c *redis.Client) { seen = append(seen, c) })
	if len(seen) != 1 || seen[0] != node {
		t.Fatalf("WatchNodes saw %v", seen)
	}
	checkMGet(t, topo, r)
	checkPubSub(t, topo, r.Namespace+":{chan}")
}

func TestCluster(t *testing.T) {
	r := testcontainers.RedisCluster(t)
	ctx := context.Background()
	topo := Of(r.Client)
	cc := r.Client.(*redis.ClusterClient)
	masters, err := topo.Masters(ctx)
	if err != nil || len(masters) < 2 {
		t.Fatalf("Masters: %d, %v", len(masters), err)
	}
	for addr, m := range masters {
		if m.Options().Addr != addr {
			t.Errorf("master %s has address %s", addr, m.Options().Addr)
		}
	}
	var mu sync.Mutex
	called := map[string]bool{}
	err = topo.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		called[c.Options().Addr] = true
		return nil
	})
	if err != nil || len(called) != len(masters) {
		t.Fatalf("ForEachMaster called %v, %v; masters %d", called, err, len(masters))
	}
	for i := range 20 {
		key := r.Namespace + ":{" + strconv.Itoa(i) + "}"
		m, err := topo.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cc.MasterForKey(ctx, key)
		if err != nil || m != want {
			t.Fatalf("MasterForKey(%s) = %s, go-redis says %v (%v)", key, m.Options().Addr, want, err)
		}
	}
	seen := map[string]bool{}
	topo.WatchNodes(ctx, func(c *redis.Client) {
		mu.Lock()
		defer mu.Unlock()
		seen[c.Options().Addr] = true
	})
	mu.Lock()
	for addr := range masters {
		if !seen[addr] {
			t.Errorf("WatchNodes did not see master %s", addr)
		}
	}
	mu.Unlock()
	topo.Reload(ctx)
	checkMGet(t, topo, r)
	checkPubSub(t, topo, r.Namespace+":{chan}")
}

// checkMGet reads keys of many slots, some missing, in one MGet.
func checkMGet(t *testing.T, topo Topology, r *testcontainers.RedisNamespace) {
	t.Helper()
	ctx := context.Background()
	var keys []string
	for i := range 30 {
		key := r.Namespace + ":{" + strconv.Itoa(i) + "}"
		keys = append(keys, key)
		if i%3 != 0 {
			if err := r.Client.Set(ctx, key, strconv.Itoa(i), time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := topo.MGet(ctx, keys)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("MGet: %d replies, %v", len(got), err)
	}
	for i, v := range got {
		if i%3 == 0 {
			if v != nil {
				t.Errorf("MGet[%d] = %v, want nil", i, v)
			}
		} else if v != strconv.Itoa(i) {
			t.Errorf("MGet[%d] = %v, want %d", i, v, i)
		}
	}
}

// checkPubSub publishes on channel once the subscription is confirmed,
// and waits for the message.
func checkPubSub(t *testing.T, topo Topology, channel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ps := topo.Subscribe(ctx, channel)
	defer func() { _ = ps.Close() }()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if err := topo.Publish(ctx, channel, "hello").Err(); err != nil {
		t.Fatal(err)
	}
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "hello" {
		t.Fatalf("received %v, %v", msg, err)
	}
}
