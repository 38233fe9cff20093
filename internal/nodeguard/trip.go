package nodeguard

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// A trip ends the calls in flight on a node the moment its breaker
// opens: a call that passed the breaker just before would otherwise wait
// out its own deadline (Timeout, and the client's retries within it) on
// a node already known down. Each call runs under a context the trip
// cancels (ending a retry's backoff, a wait for a pooled connection, a
// dial), and the trip sets every open connection's deadline to now
// (ending a read or write blocked on the socket, which a cancelled
// context does not). Such a call returns ErrDown.

// tripEpoch is the context of the calls let through since the last trip.
type tripEpoch struct {
	ctx    context.Context
	cancel context.CancelFunc
}

func newEpoch() *tripEpoch {
	ctx, cancel := context.WithCancel(context.Background())
	return &tripEpoch{ctx: ctx, cancel: cancel}
}

// conns tracks the node's open connections, for a trip to reach the
// reads blocked on them.
type conns struct {
	mu  sync.Mutex
	set map[*trackedConn]struct{} // guarded by mu
}

func (cs *conns) add(c *trackedConn) {
	cs.mu.Lock()
	if cs.set == nil {
		cs.set = map[*trackedConn]struct{}{}
	}
	cs.set[c] = struct{}{}
	cs.mu.Unlock()
}

func (cs *conns) remove(c *trackedConn) {
	cs.mu.Lock()
	delete(cs.set, c)
	cs.mu.Unlock()
}

// expire sets every open connection's read and write deadline to now.
func (cs *conns) expire() {
	cs.mu.Lock()
	list := make([]*trackedConn, 0, len(cs.set))
	for c := range cs.set {
		list = append(list, c)
	}
	cs.mu.Unlock()
	now := time.Now()
	for _, c := range list {
		_ = c.SetDeadline(now)
	}
}

// trackedConn is a connection to the node, known to its guard until
// closed. NetConn lets go-redis's pool check the socket of an idle
// connection as it checks an unwrapped one.
type trackedConn struct {
	net.Conn
	cs   *conns
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.cs.remove(c) })
	return c.Conn.Close()
}

// NetConn returns the wrapped connection.
func (c *trackedConn) NetConn() net.Conn { return c.Conn }

// epoch returns the context of the calls let through now.
func (g *Guard) epoch() *tripEpoch {
	if e := g.ep.Load(); e != nil {
		return e
	}
	g.ep.CompareAndSwap(nil, newEpoch())
	return g.ep.Load()
}

// trip ends the calls in flight: called when the breaker opens.
func (g *Guard) trip() {
	if testswitch.TripOff.Load() {
		return
	}
	old := g.epoch()
	if !g.ep.CompareAndSwap(old, newEpoch()) {
		return // another trip just ran
	}
	old.cancel()
	g.conns.expire()
}

// untilTrip runs f under cctx, a context derived from the caller's ctx
// for this call alone, which cancel ends: the next trip calls it. A call
// a trip ended (not its deadline, not the caller) returns ErrDown.
func (g *Guard) untilTrip(ctx, cctx context.Context, cancel context.CancelFunc, f func(context.Context) error) error {
	e := g.epoch()
	stop := context.AfterFunc(e.ctx, cancel)
	defer stop()
	err := f(cctx)
	if err != nil && e.ctx.Err() != nil && ctx.Err() == nil && !errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return ErrDown
	}
	return err
}
