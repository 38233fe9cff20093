package cacheaside

import (
	"context"
	"time"
)

// keepLeases renews the rebuild leases of items to a full LockTTL every
// LockTTL/3, from now until the returned stop is called or ctx ends. The caller holds the leases and is about to
// load: a load that outlives LockTTL (a slow query, a GC pause, CPU
// starvation) keeps its lease, so no other process finds the lease free
// and loads the same value again. A holder that dies stops renewing and
// its lease lapses within LockTTL; a loader that ignores its cancelled ctx
// loses the lease within LockTTL after ctx ended.
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

// renewLeases runs extend.lua for every lease (one pipeline for several).
// It reports false when none of them is held any more; a Redis error is
// counted and reported as true (the next renewal may succeed).
func (e *Entity[T]) renewLeases(ctx context.Context, items []item) bool {
	wctx, cancel := context.WithTimeout(ctx, e.c.writeTimeout)
	defer cancel()
	calls := make([]scriptCall, len(items))
	for i, it := range items {
		calls[i] = scriptCall{keys: []string{it.key + ":lock"}, args: []any{it.token, e.lockPX}}
	}
	if e.redisResult(wctx, runScripts(wctx, e.c.client, extendScript, calls)) != nil {
		return true
	}
	for i := range calls {
		if n, _ := calls[i].cmd.Int(); n == 1 {
			return true
		}
	}
	return false
}
