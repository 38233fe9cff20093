package bloom

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/internal/token"
)

// errLeaseHeld ends an automatic rebuild attempt that found another
// process's lease: that process rebuilds.
var errLeaseHeld = errors.New("bloom: another process holds the rebuild lease")

// auto runs the automatic rebuilds of a Filter with Options.Source: at
// most one at a time in this Filter (running), at most one start per
// interval (next), and one across processes (the Redis lease at key).
type auto struct {
	src      Source
	interval time.Duration
	lease    time.Duration
	key      string // the lease key, ns:bf:{name}:lease

	running atomic.Bool  // an attempt is under way
	next    atomic.Int64 // Unix nanoseconds before which no attempt starts

	attempts atomic.Int64 // attempts started
	rebuilds atomic.Int64 // rebuilds that finished
	failures atomic.Int64 // attempts that failed (not counting a held lease)

	ctx    context.Context // ends with Close
	cancel context.CancelFunc

	mu     sync.Mutex // guards closed, and wg.Add against Close's Wait
	closed bool
	wg     sync.WaitGroup

	// hook, if set, is called with each attempt's outcome once it is over
	// (nil: rebuilt, or found ready). Set by export_test.go, before use.
	hook func(error)
}

func newAuto(o Options, key string) (*auto, error) {
	if o.RebuildInterval < 0 {
		return nil, fmt.Errorf("%w: RebuildInterval %v, it must be ≥ 0", ErrInvalid, o.RebuildInterval)
	}
	if o.RebuildLease < 0 || (o.RebuildLease > 0 && o.RebuildLease < time.Millisecond) {
		return nil, fmt.Errorf("%w: RebuildLease %v, it must be 0 or at least 1ms", ErrInvalid, o.RebuildLease)
	}
	if o.Source == nil {
		return nil, nil
	}
	a := &auto{src: o.Source, interval: o.RebuildInterval, lease: o.RebuildLease, key: key}
	if a.interval == 0 {
		a.interval = defaultRebuildInterval
	}
	if a.lease == 0 {
		a.lease = defaultRebuildLease
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	return a, nil
}

// kick starts an automatic rebuild in the background, unless the Filter
// has no Source, one runs already, the last one started less than
// RebuildInterval ago, or Close was called. It costs two atomic loads when
// it starts nothing, so every check that met an untrusted shard calls it.
func (f *Filter) kick() {
	a := f.auto
	if a == nil || a.running.Load() || time.Now().UnixNano() < a.next.Load() {
		return
	}
	if !a.running.CompareAndSwap(false, true) {
		return
	}
	now := time.Now()
	if now.UnixNano() < a.next.Load() { // another attempt started and ended meanwhile
		a.running.Store(false)
		return
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.running.Store(false)
		return
	}
	a.wg.Add(1)
	a.mu.Unlock()
	a.next.Store(now.Add(a.interval).UnixNano())
	a.attempts.Add(1)
	go func() {
		defer a.wg.Done()
		rebuilt, err := f.autoRebuild(a.ctx)
		switch {
		case rebuilt:
			a.rebuilds.Add(1)
		case err != nil && !errors.Is(err, errLeaseHeld):
			a.failures.Add(1)
		}
		// Free the slot before the hook, so that a check the hook's
		// observer makes next may start the next attempt.
		a.running.Store(false)
		if a.hook != nil {
			a.hook(err)
		}
	}()
}

// autoRebuild takes the filter's rebuild lease, and if the filter is still
// not ready (another process may have just rebuilt it), rebuilds it from
// the Source, renewing the lease meanwhile. The lease is released however
// it ends. It reports whether it rebuilt.
func (f *Filter) autoRebuild(ctx context.Context) (rebuilt bool, err error) {
	a := f.auto
	tok := token.New()
	ok, err := f.client.SetNX(ctx, a.key, tok, a.lease).Result()
	if err != nil {
		return false, fmt.Errorf("bloom: filter %q: take the rebuild lease: %w", f.name, err)
	}
	if !ok {
		return false, errLeaseHeld
	}
	ctx, cancel := context.WithCancel(ctx)
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		f.renewLease(ctx, cancel, tok)
	}()
	defer func() {
		cancel()
		<-renewed
		// Release even when Close ended ctx, so that another process need
		// not wait for the lease to expire.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer rcancel()
		_ = leaseScript.Run(rctx, f.client, []string{a.key}, tok, 0).Err() // it expires anyway
	}()

	ready, err := f.ready(ctx)
	if err != nil || ready {
		return false, err
	}
	if err := f.Rebuild(ctx, a.src); err != nil {
		return false, err
	}
	return true, nil
}

// renewLease extends the lease every third of its life until ctx ends. If
// the lease turns out to be lost (it expired while Redis was unreachable,
// or Redis lost it), it cancels the rebuild: another process may be
// rebuilding by now, and its Rebuild would supersede this one anyway.
func (f *Filter) renewLease(ctx context.Context, cancel context.CancelFunc, tok string) {
	a := f.auto
	t := time.NewTicker(a.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		held, err := leaseScript.Run(ctx, f.client, []string{a.key}, tok, a.lease.Milliseconds()).Int64()
		if err == nil && held == 0 {
			cancel()
			return
		}
		// An error is retried on the next tick; the lease outlives two.
	}
}

// Close stops the Filter's automatic rebuild: a running one is aborted
// (the filter keeps its current generations) and its lease released, and
// Close waits for that; none starts afterwards. Checks and adds keep
// working. Close always returns nil; a Filter without Options.Source has
// nothing to stop. It may be called more than once.
func (f *Filter) Close() error {
	a := f.auto
	if a == nil {
		return nil
	}
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.cancel()
	a.wg.Wait()
	return nil
}
