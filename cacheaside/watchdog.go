package cacheaside

import (
	"context"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

// keepLeases renews the rebuild leases of items to a full LockTTL every
// LockTTL/3, from now until the returned stop is called or ctx ends. The caller holds the leases and is about to
// load: a load that outlives LockTTL (a slow query, a GC pause, CPU
// starvation) keeps its lease, so no other process finds the lease free
// and loads the same value again. A holder that dies stops renewing and
// its lease lapses within LockTTL; a loader that ignores its cancelled ctx
// loses the lease within LockTTL after ctx ended.
//
// A renewal that finds a lease lapsed does not count it: the store (or
// release) that ends the load does, once (see EventLeaseLost).
//
// stop waits for the renewer to end. Call it after the result is stored
// (fill.lua deletes the lease in the same step), not before: a renewal
// that runs after the store finds the lease gone and does nothing.
func (e *Entity[T]) keepLeases(ctx context.Context, items []item) (stop func()) {
	rctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		every := max(e.p.LockTTL/3, time.Millisecond)
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
			}
			if !e.renewLeases(rctx, items) {
				return
			}
			t.Reset(every)
		}
	}()
	return func() {
		cancel()
		<-ended
	}
}

// renewLeases renews the leases of items. It reports false when none of
// them is held any more; a Redis error is counted and reported as true
// (the next renewal may succeed). A lease found lost is not counted here:
// the store (or release) that ends it counts it, once.
func (e *Entity[T]) renewLeases(ctx context.Context, items []item) bool {
	held, err := e.extendLeases(ctx, items)
	if err != nil {
		return true
	}
	for _, h := range held {
		if h {
			return true
		}
	}
	return false
}

// extendLeases runs extend.lua for every lease of items (one pipeline for
// several), which renews to a full LockTTL those still held: held[i]
// reports whether items[i]'s lease is still this caller's. A Redis error
// is counted and returned.
func (e *Entity[T]) extendLeases(ctx context.Context, items []item) (held []bool, err error) {
	wctx, cancel := context.WithTimeout(ctx, e.c.writeTimeout)
	defer cancel()
	calls := make([]script.Call, len(items))
	for i, it := range items {
		calls[i] = script.Call{Script: extendScript, Keys: []string{it.key + ":lock"}, Args: []any{it.token, e.lockPX}}
	}
	if err := e.redisResult(wctx, script.RunMany(wctx, e.c.client, calls)); err != nil {
		return nil, err
	}
	held = make([]bool, len(calls))
	for i := range calls {
		n, _ := calls[i].Cmd.Int()
		held[i] = n == 1
	}
	return held, nil
}
