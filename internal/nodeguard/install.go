package nodeguard

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/topology"
)

// Set holds the guards installed on one client: one for a standalone
// client, one per node for a Cluster client.
type Set struct {
	opts Options
	mu   sync.Mutex
	// byAddr and hooked are guarded by mu; refs by setsMu.
	byAddr map[string]*Guard
	hooked map[*redis.Client]bool
	refs   int           // Installs not yet released
	stop   chan struct{} // closed when every Install is released: probers end
}

// sets holds the Set of every client Install was given and not yet
// released, so that two Kits on one client share its guards.
var (
	setsMu sync.Mutex
	sets   = map[redis.UniversalClient]*Set{} // guarded by setsMu
)

// Install adds the guards to client, once per client: a *redis.Client
// gets one guard, a *redis.ClusterClient one per node (nodes it makes
// from now on, and those reachable now through ForEachShard within a
// second). Other clients get none; Install then returns nil. While an
// Install is not released, another on the same client returns the same
// Set and ignores o. release forgets the Set once every Install of it is
// released; the hooks stay on the client and keep working.
func Install(client redis.UniversalClient, o Options) (s *Set, release func()) {
	topo := topology.Of(client)
	if topo.Kind() == topology.Unsupported {
		return nil, func() {}
	}
	setsMu.Lock()
	s, ok := sets[client]
	if !ok {
		s = &Set{opts: o.withDefaults(), byAddr: map[string]*Guard{}, hooked: map[*redis.Client]bool{}, stop: make(chan struct{})}
		sets[client] = s
	}
	s.refs++
	setsMu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			setsMu.Lock()
			defer setsMu.Unlock()
			if s.refs--; s.refs == 0 && sets[client] == s {
				delete(sets, client)
				close(s.stop)
			}
		})
	}
	if ok {
		return s, release
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	topo.WatchNodes(ctx, s.hook)
	return s, release
}

// hook adds the guard of n's address to n, once.
func (s *Set) hook(n *redis.Client) {
	addr := n.Options().Addr
	s.mu.Lock()
	if s.hooked[n] {
		s.mu.Unlock()
		return
	}
	s.hooked[n] = true
	g := s.byAddr[addr]
	if g == nil {
		g = New(s.opts)
		g.stop = s.stop
		s.byAddr[addr] = g
	}
	g.node.Store(n)
	o := n.Options()
	g.deadlines.Store(o.ReadTimeout != -2 && o.WriteTimeout != -2)
	s.mu.Unlock()
	n.AddHook(g)
}

// Guards returns the guards by node address.
func (s *Set) Guards() map[string]*Guard {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*Guard, len(s.byAddr))
	for a, g := range s.byAddr {
		out[a] = g
	}
	return out
}

// Down returns how many nodes' breakers are open.
func (s *Set) Down() int {
	n := 0
	for _, g := range s.Guards() {
		if g.Down() {
			n++
		}
	}
	return n
}
