package cacheaside

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/internal/backoff"
)

// A Redis that was unreachable may come back holding entries older than
// writes made meanwhile: a write whose invalidation failed in another
// process (its Put returned ErrAfterCommit, the retry not yet run), or a
// change that the change-data-capture invalidator (repo/cdc) could not
// apply while Redis was away. The retrier's hold covers the first case in
// the writer's own process only. A recovery gate covers both in every
// process: it is a catch-up call, typically repo/cdc's CatchUp, that
// returns once every write committed before the call has been applied to
// the cache.
//
// A Cache with a gate (AddRecoveryGate) is closed from the moment it is
// given the gate and from every failed Redis call on: its reads (near
// cache included) go to the loaders, uncached, counted as EventBypass.
// In the background it pings Redis until it answers, then calls every
// gate; once they all returned nil with no Redis failure meanwhile, reads
// use the cache again. So a read never serves an entry written before a
// Redis failure this process saw until the writes committed before Redis
// answered again have been applied. The cost is nothing per read while
// the gate is open (one atomic load), and after each failure the reads of
// the recovery (until the catch-up returns: a round trip of the
// invalidator's status report, about a second with repo/cdc's defaults)
// go to the database.

// RecoveryGate is a catch-up call: it returns nil once every write
// committed before it began has been applied to the cache, or an error
// (tried again with backoff); it honours ctx.
type RecoveryGate func(ctx context.Context) error

// Backoff of the recovery loop's pings and catch-up tries, and the bound
// of each ping.
const (
	recoverMin  = 10 * time.Millisecond
	recoverMax  = 500 * time.Millisecond
	recoverPing = time.Second
)

// recovery is a Cache's recovery gate state.
type recovery struct {
	c *Cache

	closed atomic.Bool  // reads bypass the cache; read without mu
	ngates atomic.Int32 // len(gates), read without mu (see settle.active)

	mu      sync.Mutex
	gates   map[int]RecoveryGate // guarded by mu
	next    int                  // guarded by mu; key of the next gate
	epoch   uint64               // guarded by mu; Redis failures and new gates
	running bool                 // guarded by mu
	open    chan struct{}        // guarded by mu; closed while reads use the cache; nil = open
	stop    context.CancelFunc   // guarded by mu; ends the gate calls in progress

	// ignore, for tests only, turns the rule off: reads never bypass.
	ignore bool
}

// AddRecoveryGate makes the Cache wait for gate after every Redis failure
// (and at once) before it serves entries again; see RecoveryGate. repo/cdc's
// Invalidator adds its CatchUp to its repositories' caches while it runs.
// The returned func removes the gate.
func (c *Cache) AddRecoveryGate(gate RecoveryGate) (remove func()) {
	r := &c.rec
	r.mu.Lock()
	if r.gates == nil {
		r.gates = make(map[int]RecoveryGate)
	}
	k := r.next
	r.next++
	r.gates[k] = gate
	r.ngates.Store(int32(len(r.gates)))
	r.closeLocked()
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		delete(r.gates, k)
		r.ngates.Store(int32(len(r.gates)))
		r.epoch++ // a loop in progress starts over without this gate
		if r.stop != nil {
			r.stop()
		}
		if len(r.gates) == 0 && r.closed.Load() {
			r.openLocked() // no gate holds reads any more
		}
		r.mu.Unlock()
	}
}

// Recovering reports whether reads bypass the cache until a recovery
// gate lets them through again.
func (c *Cache) Recovering() bool { return c.rec.closed.Load() }

// WaitRecovered returns once reads use the cache (no recovery gate holds
// them), or ctx's error. It is the readiness check of a service whose
// Invalidator (repo/cdc) runs: until it returns, reads are served, but
// by the database.
func (c *Cache) WaitRecovered(ctx context.Context) error {
	for {
		c.rec.mu.Lock()
		ch := c.rec.open
		c.rec.mu.Unlock()
		if ch == nil || !c.rec.closed.Load() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// bypass reports whether reads must not use the cache now.
func (r *recovery) bypass() bool { return r.closed.Load() && !r.ignore }

// failed records a Redis failure: with a gate, reads bypass the cache
// until the gate let them through.
func (r *recovery) failed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.gates) > 0 {
		r.closeLocked()
	}
}

func (r *recovery) closeLocked() {
	r.epoch++
	r.closed.Store(true)
	r.c.health.set(recovering)
	if r.open == nil {
		r.open = make(chan struct{})
	}
	if !r.running {
		r.running = r.c.goBackground(r.loop)
	}
}

// loop pings Redis until it answers, then runs the gates; it opens the
// gate when they all returned nil and nothing failed since the ping.
func (r *recovery) loop() {
	b := backoff.New(recoverMin, recoverMax)
	for {
		r.mu.Lock()
		epoch := r.epoch
		gates := make([]RecoveryGate, 0, len(r.gates))
		for _, g := range r.gates {
			gates = append(gates, g)
		}
		if len(gates) == 0 { // every gate removed
			r.openLocked()
			r.mu.Unlock()
			return
		}
		ctx, stop := context.WithCancel(r.c.base)
		r.stop = stop
		r.mu.Unlock()
		ok := r.pass(ctx, gates)
		stop()
		if ok {
			r.mu.Lock()
			if r.epoch == epoch {
				r.openLocked()
				r.mu.Unlock()
				return
			}
			r.mu.Unlock()
			b.Reset()
			continue
		}
		if b.Wait(r.c.base) != nil {
			r.mu.Lock()
			r.running = false
			r.mu.Unlock()
			return
		}
	}
}

// openLocked lets reads use the cache again and ends the loop.
func (r *recovery) openLocked() {
	r.closed.Store(false)
	r.c.health.And(^recovering)
	r.running = false
	if r.open != nil {
		close(r.open)
		r.open = nil
	}
}

// pass pings Redis and, once it answered, runs every gate: true when all
// returned nil.
func (r *recovery) pass(ctx context.Context, gates []RecoveryGate) bool {
	pctx, cancel := context.WithTimeout(ctx, recoverPing)
	err := r.c.client.Ping(pctx).Err()
	cancel()
	if err != nil {
		return false
	}
	// Redis answers: the invalidation retrier tries at once.
	r.c.answered()
	for _, g := range gates {
		if g(ctx) != nil {
			return false
		}
	}
	return true
}
