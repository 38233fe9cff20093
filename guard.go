package asidekit

import (
	"slices"
	"strings"
	"time"

	"github.com/asidekit/asidekit/internal/nodeguard"
)

// GuardOptions configure the node guard New installs on Config.Redis: a
// go-redis hook per Redis node (per node of a Cluster client) that every
// component of the Kit calls through, so that they all see one health per
// node. After Threshold consecutive calls the node did not answer, every
// call fails at once (an error no package takes for a server reply, so
// each takes its fail-open path: the cache and Bloom filter read the
// database, a limiter made with LimitOptions limits in the process (its
// local fallback), seqgen issues from the database) until the guard's own PING, sent once per Cooldown,
// finds the node back: no request pays for a probe. The calls in flight
// on the node when its breaker opens end then too, with ErrRedisDown.
// Each call is also bounded by CallTimeout. The hook stays on the client
// after Close and guards the client's other calls too.
type GuardOptions struct {
	// Disabled installs no guard: each package then bounds and breaks
	// its own calls only.
	Disabled bool
	// Threshold is the number of consecutive failed calls to a node that
	// open its breaker. Default 3.
	Threshold int
	// Cooldown is how often the guard pings a node whose breaker is
	// open. Default 500 ms.
	Cooldown time.Duration
	// CallTimeout bounds each command, and each pipeline of at most 16
	// commands, when the caller's context allows longer; the caller's
	// earlier deadline wins. Blocking commands (BLPOP, WAIT, XREAD
	// BLOCK, ...), pub/sub and bigger pipelines are not bounded. It
	// cuts a call short on a client with ContextTimeoutEnabled (as
	// RecommendedTimeout's settings have); on another the client's read
	// and write timeouts bound each call. Default RecommendedTimeout
	// (250 ms); negative: none.
	CallTimeout time.Duration
}

// ErrRedisDown is the error of a Redis call the node guard refused
// because the node failed its last calls (its breaker is open). The
// packages take it for Redis being unavailable; it reaches callers only
// inside their own errors (limit.ErrFailedOpen's, for one).
var ErrRedisDown = nodeguard.ErrDown

// installGuard installs the node guard on cfg.Redis; release undoes its
// registration (the hooks stay on the client).
func installGuard(cfg Config) (*nodeguard.Set, func()) {
	var o GuardOptions
	if cfg.Guard != nil {
		o = *cfg.Guard
	}
	if o.Disabled {
		return nil, func() {}
	}
	return nodeguard.Install(cfg.Redis, nodeguard.Options{Threshold: o.Threshold, Cooldown: o.Cooldown, Timeout: o.CallTimeout})
}

// RedisNodesDown returns how many of the Redis nodes the Kit has called
// are known down (their guard's breaker open); 0 without a guard.
func (k *Kit) RedisNodesDown() int {
	if k.guards == nil {
		return 0
	}
	return k.guards.Down()
}

// RedisNode is the state of one Redis node's guard, as Kit.RedisNodes
// reports it.
type RedisNode struct {
	Addr  string // the node's address
	Down  bool   // its breaker is open: calls to the node fail at once
	Opens uint64 // times its breaker opened
}

// RedisNodes returns the state of the guard of every Redis node the Kit
// has called, by address; nil without a guard. It makes no Redis call,
// so a metrics scrape may call it while Redis is down.
func (k *Kit) RedisNodes() []RedisNode {
	if k.guards == nil {
		return nil
	}
	gs := k.guards.Guards()
	out := make([]RedisNode, 0, len(gs))
	for addr, g := range gs {
		out = append(out, RedisNode{Addr: addr, Down: g.Down(), Opens: g.Opens()})
	}
	slices.SortFunc(out, func(a, b RedisNode) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}
