package cacheaside

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/token"
)

// Lease statuses returned by lease.lua.
const (
	leaseHeld     = 0 // another caller holds the lease
	leaseAcquired = 1 // ours: load, then fill.lua with the version
	leaseNoop     = 2 // nothing to rebuild: a fresh entry (miss mode) or a changed one (refresh mode)
)

// defaultRecheck is how often a waiter re-checks without a notification,
// so that a lost message or a crashed lease holder delays it but never
// hangs it beyond WaitTimeout.
const defaultRecheck = 100 * time.Millisecond

type leaseReply struct {
	status int64
	ver    string // the version (leaseAcquired) or the holder's lease token (leaseHeld)
	entry  []byte // nil when there is none
}

// lease runs lease.lua for the lease token tok. observed is "" (miss
// mode) or the entry header the caller saw (refresh mode).
func (e *Entity[T]) lease(ctx context.Context, key, tok, observed string) (leaseReply, error) {
	res, err := leaseScript.Run(ctx, e.c.client, []string{key, key + ":lock", key + ":ver"},
		tok, e.lockPX, token.New(), e.verPX, time.Now().UnixMilli(), observed).Slice()
	if err != nil {
		return leaseReply{}, err
	}
	return parseLease(res)
}

// parseLease reads lease.lua's reply.
func parseLease(res []any) (leaseReply, error) {
	var r leaseReply
	if len(res) < 1 {
		return r, fmt.Errorf("cacheaside: lease.lua returned %d values", len(res))
	}
	r.status, _ = res[0].(int64)
	if len(res) > 1 {
		r.ver, _ = res[1].(string)
	}
	if len(res) > 2 {
		if s, ok := res[2].(string); ok {
			r.entry = []byte(s)
		}
	}
	return r, nil
}

// confirmLeases is the last check before loading items, whose leases this
// caller took with a lease call sent at taken: it splits them into those
// still held (kept) and those lost, which it counts. A lease taken less
// than a renewal period (LockTTL/3) ago has at least two thirds of its
// lifetime left, so the check costs nothing unless the caller was held up
// (CPU starvation, a GC pause) since; then one round trip renews the
// leases still held and finds those that lapsed, which another caller may
// have taken (and loaded) meanwhile. On a Redis error every item is kept:
// the load goes ahead, and its store will tell.
func (e *Entity[T]) confirmLeases(ctx context.Context, items []item, taken time.Time) (kept, lost []item) {
	if time.Since(taken) < e.p.LockTTL/3 {
		return items, nil
	}
	held, err := e.extendLeases(ctx, items)
	if err != nil {
		return items, nil
	}
	for i, it := range items {
		if held[i] {
			kept = append(kept, it)
		} else {
			e.leaseLost(it.key)
			lost = append(lost, it)
		}
	}
	return kept, lost
}

// leased is a miss for Mutex, AsyncRefresh and EarlyRefresh: one caller
// across all processes takes the lease (renewed while it loads) and loads;
// the others wait for its value-ready notification (or re-check every
// recheck), up to WaitTimeout. A lease that lapsed before the load began
// (see confirmLeases) is waited for as if another caller held it; a
// loader that calls runtime.Goexit gives the lease up, as a failed load
// does. In this process callers share one leased() through the flight
// group. A Redis failure before the load returns errFailOpen.
func (e *Entity[T]) leased(ctx context.Context, key, id string, load Loader[T], st *stale[T], mark func()) (T, outcome, error) {
	var zero T
	tok := token.New()
	deadline := time.NewTimer(e.p.WaitTimeout)
	defer deadline.Stop()
	var tick *time.Timer
	var w *waiter
	var holder string // lease token of the holder the last lease call saw
	for {
		mark() // callers that joined so far are covered by what this lease call reads
		taken := time.Now()
		r, err := e.lease(ctx, key, tok, "")
		if err = e.redisResult(ctx, err); err != nil {
			return zero, validAll, err
		}
		switch r.status {
		case leaseAcquired:
			it := item{id: id, key: key, ver: r.ver, token: tok}
			if _, lost := e.confirmLeases(ctx, []item{it}, taken); len(lost) > 0 {
				break // lapsed: wait for whoever took it, or take it back
			}
			return e.loadLeased(ctx, it, load, st, mark)
		case leaseNoop:
			if v, err, ok := e.decodeFresh(ctx, key, r.entry); ok {
				return v, validMarked, err
			}
			continue
		}
		// Held by another caller (or lost): wait for its notification.
		holder = ""
		if r.status == leaseHeld {
			holder = r.ver
		}
		if st == nil && r.entry != nil {
			st = e.classify(r.entry, 0).stale()
		}
		if w == nil {
			e.ctr.inc(EventLockWait)
			w = e.c.hub.register(ctx, key)
			defer e.c.hub.unregister(w)
			tick = time.NewTimer(min(e.c.recheck, e.p.WaitTimeout))
			defer tick.Stop()
			continue // re-check now that a notification can no longer be missed
		}
		select {
		case <-ctx.Done():
			return zero, validAll, ctx.Err()
		case <-deadline.C:
			e.ctr.inc(EventLockTimeout)
			if v, ok := e.serveStale(st); ok {
				return v, validAll, nil
			}
			return zero, validAll, fmt.Errorf("%w: %s %q after %v", ErrWaitTimeout, e.name, id, e.p.WaitTimeout)
		case <-w.wake:
			// The holder seen above stored after this caller's last lease
			// call, which covers the callers joined before its mark.
			if b, ok := w.stored(key, holder); ok {
				if v, err, ok := e.classify(b, 0).current(); ok {
					return v, validMarked, err
				}
			}
		case <-tick.C:
		}
		tick.Reset(min(e.c.recheck, e.p.WaitTimeout))
	}
}

// loadLeased loads it, whose lease this caller holds, renewing the lease
// until the result is stored (see finish). A failed load, or a loader that
// calls runtime.Goexit, gives the lease up, which wakes its waiters.
func (e *Entity[T]) loadLeased(ctx context.Context, it item, load Loader[T], st *stale[T], mark func()) (T, outcome, error) {
	defer e.keepLeases(ctx, []item{it})()
	returned := false
	defer e.releaseUnlessReturned(ctx, []item{it}, &returned)
	v, d, err := e.invoke(withRequired(ctx, it.ver), it.id, load)
	returned = true
	return e.finish(ctx, it, v, d, err, st, mark)
}
