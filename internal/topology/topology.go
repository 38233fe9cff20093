package topology

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnsupported is returned by the per-node methods of an Unsupported
// Topology.
var ErrUnsupported = errors.New("topology: no per-node access through this redis client")

// The clients Of supports, as the errors that refuse others name them.
const (
	Supported         = "a *redis.Client or *redis.ClusterClient"
	SupportedSentinel = "a *redis.Client (standalone or Sentinel) or a *redis.ClusterClient"
)

// Kind is what a client is, as far as asidekit's per-node work goes.
type Kind int8

const (
	// Unsupported: a client the seam does not know (a Ring, a custom
	// UniversalClient). Commands go through it as it routes them.
	Unsupported Kind = iota
	// Standalone: every key on one server (a *redis.Client, standalone or
	// Sentinel failover).
	Standalone
	// Cluster: keys spread over several masters, each key served by one
	// (a *redis.ClusterClient).
	Cluster
)

// Topology answers the questions that depend on the shape of a client.
// Of returns one; it is safe for concurrent use.
type Topology interface {
	// Kind says what the client is.
	Kind() Kind

	// Timeouts returns the client's timeouts as its options state them;
	// false for an Unsupported client.
	Timeouts() (Timeouts, bool)

	// NodeOptions returns a copy of a Standalone client's options, taken
	// now (nil for the other kinds). go-redis updates a client's options
	// while it makes its first connection: take the copy before the
	// client is used concurrently.
	NodeOptions() *redis.Options

	// Masters returns a client for every master, by address (on a
	// Cluster, those that serve slots, from CLUSTER SLOTS read anew on
	// every call), for per-node work: a SCAN, a subscription, a WAIT.
	// ErrUnsupported on an Unsupported client.
	Masters(ctx context.Context) (map[string]*redis.Client, error)

	// ForEachMaster calls fn with every master's client, concurrently on
	// a Cluster, and returns the first error (after every call ended).
	// For an ordered, one-at-a-time walk, use Masters. ErrUnsupported on
	// an Unsupported client, without calling fn.
	ForEachMaster(ctx context.Context, fn func(context.Context, *redis.Client) error) error

	// MasterForKey returns the client of the master serving key.
	// ErrUnsupported on an Unsupported client.
	MasterForKey(ctx context.Context, key string) (*redis.Client, error)

	// Reload makes the client learn the topology anew (after an error
	// that may mean a node died or slots moved). Nothing to do but on a
	// Cluster.
	Reload(ctx context.Context)

	// WatchNodes calls fn with the client of every node reachable now
	// (within ctx; on a Cluster masters and replicas) and of every node
	// the client makes from now on. fn may be called concurrently, and
	// more than once for a node. Nothing on an Unsupported client.
	WatchNodes(ctx context.Context, fn func(*redis.Client))

	// MGet reads keys and returns one reply per key (nil or string), in
	// order: one MGET on one server; on a Cluster one per hash slot, all
	// in one pipeline.
	MGet(ctx context.Context, keys []string) ([]any, error)

	// Subscribe subscribes to channel: sharded pub/sub on a Cluster (on
	// the master of the channel's slot, which ends the subscription when
	// the slot moves), plain pub/sub otherwise.
	Subscribe(ctx context.Context, channel string) *redis.PubSub

	// Publish publishes msg on channel, as Subscribe listens to it.
	Publish(ctx context.Context, channel string, msg any) *redis.IntCmd
}

// Timeouts are a client's timeouts; zero durations mean go-redis's
// defaults.
type Timeouts struct {
	Dial, Read, Write time.Duration
	// ContextTimeoutEnabled: socket reads and writes end at the
	// context's deadline.
	ContextTimeoutEnabled bool
}

// Of returns the Topology of client (which may be nil: Unsupported).
func Of(client redis.UniversalClient) Topology {
	switch c := client.(type) {
	case *redis.Client:
		return standalone{c}
	case *redis.ClusterClient:
		return cluster{c}
	}
	return other{client}
}
