// Package nodeguard gives every component of one Kit the same view of a
// Redis node's health: a go-redis hook, installed once per node, that
// keeps one breaker for the node and bounds each call with a deadline of
// its own. While the node is known down a call fails at once with
// ErrDown instead of paying a timeout (and the client's retries) per call
// and per component; one call per cooldown probes the node (half-open),
// and its success closes the breaker for every component at once.
package nodeguard

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/breaker"
)

// ErrDown is returned, without calling Redis, by a call made while the
// node's breaker is open. It is not a server reply: every package counts
// it as Redis being unavailable and takes its fail-open path.
var ErrDown = errors.New("asidekit: redis node down (breaker open)")

// Options configure the guard of one node. Zero fields take the defaults.
type Options struct {
	// Threshold is the number of consecutive failed calls that open the
	// breaker. Default DefaultThreshold.
	Threshold int
	// Cooldown is how often, while the breaker is open, the guard pings
	// the node (no caller's call probes it). Default DefaultCooldown.
	Cooldown time.Duration
	// Timeout bounds each call (a command, or a pipeline of at most
	// MaxBoundedPipeline commands) when the caller's context allows
	// longer; the caller's earlier deadline wins. Blocking commands
	// (BLPOP, WAIT, XREAD BLOCK, ...) and bigger pipelines have no
	// deadline of the guard's. Default DefaultTimeout; negative: none.
	// It cuts a call short only on a client that honours context
	// deadlines (ContextTimeoutEnabled); elsewhere the client's own read
	// and write timeouts bound the call.
	Timeout time.Duration
}

// Defaults of Options.
const (
	DefaultThreshold = 3
	DefaultCooldown  = 500 * time.Millisecond
	DefaultTimeout   = 250 * time.Millisecond
	// MaxBoundedPipeline is the largest pipeline Timeout bounds: a bigger
	// one (a warm-up, a batch) may take longer on a healthy node.
	MaxBoundedPipeline = 16
)

func (o Options) withDefaults() Options {
	if o.Threshold <= 0 {
		o.Threshold = DefaultThreshold
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Guard is the hook of one node, added to the node's client by Install.
// While its breaker is open no caller's call reaches the node: a prober
// of its own pings the node once per cooldown and closes the breaker at
// the first answer. Its methods are safe for concurrent use.
type Guard struct {
	timeout  time.Duration // <= 0: no deadline of the guard's
	cooldown time.Duration
	br       breaker.Breaker
	// node is the latest client of the node the guard was added to: the
	// prober's way to it. stop ends the prober (nil: never).
	node    atomic.Pointer[redis.Client]
	stop    <-chan struct{}
	probing atomic.Bool // a prober runs
	// ep is the context of the calls let through since the last trip
	// (nil until the first call); conns the node's open connections.
	ep    atomic.Pointer[tripEpoch]
	conns conns
	// deadlines is false when a client of the node never sets its
	// sockets' deadlines (read or write timeout -2): a trip's deadline
	// would then stay on a connection. Its connections are not tracked.
	deadlines atomic.Bool
	// off, set by tests only, lets every call through unbounded: the
	// components then each find out on their own that the node is down.
	off bool
}

// New returns the guard of one node.
func New(o Options) *Guard {
	o = o.withDefaults()
	// The breaker's cooldown is never reached: the prober closes it. It
	// is set to a day so that its half-open state never admits a caller.
	return &Guard{timeout: o.Timeout, cooldown: o.Cooldown, br: breaker.Breaker{Threshold: int64(o.Threshold), Cooldown: 24 * time.Hour}}
}

// Down reports whether the breaker is open (or half-open): the node
// failed its last calls.
func (g *Guard) Down() bool { return g.br.Open() }

// Opens returns how many times the breaker opened.
func (g *Guard) Opens() uint64 { return g.br.Opens() }

// DialHook passes dials through: a dial happens inside a command (which
// the guard already let through) or in a pub/sub reconnect loop of its
// own, and the client's DialTimeout bounds it. It keeps track of the
// connection, for a trip to end the reads blocked on it.
func (g *Guard) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil || g.off || !g.deadlines.Load() {
			return c, err
		}
		tc := &trackedConn{Conn: c, cs: &g.conns}
		g.conns.add(tc)
		return tc, nil
	}
}

// ProcessHook guards one command.
func (g *Guard) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if g.off {
			return next(ctx, cmd)
		}
		err := g.call(ctx, !blocking(cmd), func(ctx context.Context) error { return next(ctx, cmd) })
		if err != nil && (cmd.Err() == nil || errors.Is(err, ErrDown)) {
			cmd.SetErr(err)
		}
		return err
	}
}

// ProcessPipelineHook guards one pipeline (or transaction) as one call.
func (g *Guard) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if g.off {
			return next(ctx, cmds)
		}
		bounded := len(cmds) <= MaxBoundedPipeline
		for _, c := range cmds {
			if blocking(c) {
				bounded = false
			}
		}
		err := g.call(ctx, bounded, func(ctx context.Context) error { return next(ctx, cmds) })
		if errors.Is(err, ErrDown) {
			for _, c := range cmds {
				c.SetErr(err)
			}
		}
		return err
	}
}

// inCall marks the context of a call the guard let through: go-redis
// runs a new connection's handshake (HELLO, CLIENT SETINFO) through the
// same hooks, within the command that needed the connection. That inner
// call is part of the outer one: it passes, and only the outer one is
// recorded (else a probe would be refused by its own handshake).
type inCall struct{}

// call makes one call through the breaker, under the guard's deadline
// when bounded.
func (g *Guard) call(ctx context.Context, bounded bool, f func(context.Context) error) error {
	if ctx.Value(inCall{}) != nil || g.released() {
		return f(ctx)
	}
	if g.br.Open() {
		return ErrDown
	}
	// One derived context per call, with the guard's deadline if it is
	// the earlier, and cancelled by the next trip (untilTrip).
	cctx := context.WithValue(ctx, inCall{}, true)
	var cancel context.CancelFunc
	if dl, ok := ctx.Deadline(); bounded && g.timeout > 0 && (!ok || time.Until(dl) > g.timeout) {
		cctx, cancel = context.WithTimeout(cctx, g.timeout)
	} else {
		cctx, cancel = context.WithCancel(cctx)
	}
	defer cancel()
	// A call that runs out of a package's bound (WithBound) is a failure
	// from that moment: the package stopped waiting for it, and on a
	// client that does not end its reads at the context's deadline the
	// call itself may return much later; the breaker must not wait for
	// it. (The guard's own deadline counts when the call returns, as it
	// cuts a call short only on a client that honours it: elsewhere a
	// slow node that still answers is no failure.) failed makes sure a
	// call is counted once.
	var failed atomic.Bool
	fail := func() {
		if failed.CompareAndSwap(false, true) {
			g.fail()
		}
	}
	stopWatch := context.AfterFunc(cctx, func() {
		if boundReached(cctx) {
			fail()
		}
	})
	err := g.untilTrip(ctx, cctx, cancel, f)
	stopWatch()
	switch {
	case errors.Is(err, ErrDown):
		// A trip ended it: the breaker is open already.
	case err == nil || !unavailable(err):
		g.br.Success() // an answer, even an error reply, is a node at work
	case ctx.Err() != nil && !boundReached(ctx):
		// The caller gave up (cancelled, or its own deadline passed)
		// before any call bound: that says nothing about the node. A
		// probe that ends so leaves the breaker half-open; another goes
		// after another cooldown.
	default:
		fail()
	}
	return err
}

// fail counts one failed call, trips the calls in flight when it opens
// the breaker, and starts the prober while the breaker is open.
func (g *Guard) fail() {
	opens := g.br.Opens()
	g.br.Failure()
	if g.br.Opens() != opens {
		g.trip()
	}
	if g.br.Open() && g.probing.CompareAndSwap(false, true) {
		go g.probe()
	}
}

// released reports whether the guard's Set was released (every Kit on
// the client closed): its hook, which stays on the client, then lets
// every call through, as no prober would close its breaker.
func (g *Guard) released() bool {
	select {
	case <-g.stop:
		return true
	default:
		return false
	}
}

// probe pings the node once per cooldown while the breaker is open, and
// closes it at the first answer: no caller's request pays for a probe.
// It ends then, or when the client is closed or the guard's Set released.
func (g *Guard) probe() {
	defer g.probing.Store(false)
	t := time.NewTimer(g.cooldown)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		n := g.node.Load()
		if n == nil {
			return
		}
		timeout := g.timeout
		if timeout <= 0 {
			timeout = DefaultTimeout
		}
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), inCall{}, true), timeout)
		err := n.Ping(ctx).Err()
		cancel()
		switch {
		case err == nil:
			g.br.Success()
			return
		case errors.Is(err, redis.ErrClosed):
			return
		}
		t.Reset(g.cooldown)
	}
}

// unavailable reports whether err says the node could not serve a call:
// every error but a server's reply, and the replies of a server that
// cannot serve yet.
func unavailable(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true
	}
	for _, p := range [...]string{"LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// blocking reports whether cmd may wait on the server by design, so
// that no deadline of the guard's may cut it short.
func blocking(cmd redis.Cmder) bool {
	name := strings.ToLower(cmd.Name())
	switch name {
	case "blpop", "brpop", "brpoplpush", "blmove", "blmpop", "bzpopmin", "bzpopmax", "bzmpop",
		"wait", "waitaof", "subscribe", "psubscribe", "ssubscribe", "monitor", "sync", "psync":
		return true
	case "xread", "xreadgroup":
		for _, a := range cmd.Args() {
			if s, ok := a.(string); ok && strings.EqualFold(s, "block") {
				return true
			}
		}
	}
	return false
}
