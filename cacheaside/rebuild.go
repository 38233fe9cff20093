package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/token"
)

// This file is a miss, top to bottom: miss picks the strategy's rebuild
// (leased for Mutex, AsyncRefresh and EarlyRefresh; loadAndStore for None
// and SingleFlight), shared in this process through the flight group; the
// rebuild loads (loadLeased under a lease) and finish stores the result,
// version-checked, and maps it to Get's answer (result).

// request is one Get's miss, passed by value down the miss path: the id
// and its entry key (and, once known, the version token read before the
// load and the lease held for it), the loader, what to serve if the load
// fails, and the flight's mark.
type request[T any] struct {
	item
	load  Loader[T]
	stale *stale[T] // the value to serve within Grace if the load fails, or nil
	mark  func()    // called before the Redis step that validates the result (see validMarked)
	share bool      // whether the miss may join (or start) a load shared with other callers
}

// stale is a value past its logical expiry, kept to be served within Grace
// if the loader fails.
type stale[T any] struct {
	v      T
	expiry int64 // Unix ms
}

// miss handles a cache miss: the filter, then the strategy. retry reports
// that the caller joined a shared load whose result it may not use; an
// error matching errFailOpen, that Redis failed before the load began.
func (e *Entity[T]) miss(ctx context.Context, r request[T]) (v T, retry bool, err error) {
	var zero T
	if e.p.Filter != nil {
		ok, err := e.p.Filter.MightContain(ctx, r.id)
		switch {
		case err != nil && ctx.Err() != nil:
			return zero, false, ctx.Err()
		case err != nil:
			e.ctr.inc(EventCacheError)
		case !ok:
			e.ctr.inc(EventFiltered)
			return zero, false, ErrNotFound
		}
	}
	rebuild := e.loadAndStore
	if e.p.Strategy.leases() {
		rebuild = e.leased
	}
	if !e.p.Strategy.shares() || !r.share {
		r.mark = noMark
		v, _, err = rebuild(ctx, r)
		return v, false, err
	}
	return e.flight.do(ctx, r.id, func(ctx context.Context, mark func()) (T, outcome, error) {
		r.mark = mark
		return rebuild(ctx, r)
	})
}

// leased is a miss for Mutex, AsyncRefresh and EarlyRefresh: one caller
// across all processes takes the lease (renewed while it loads) and loads;
// the others wait for its value-ready notification (or re-check every
// recheck), up to WaitTimeout. A lease that lapsed before the load began
// (see confirmLeases) is waited for as if another caller held it; a
// loader that calls runtime.Goexit gives the lease up, as a failed load
// does. In this process callers share one leased() through the flight
// group. A Redis failure before the load returns errFailOpen.
func (e *Entity[T]) leased(ctx context.Context, r request[T]) (T, outcome, error) {
	var zero T
	r.token = token.New()
	deadline := time.NewTimer(e.p.WaitTimeout)
	defer deadline.Stop()
	var tick *time.Timer
	var w *waiter
	var holder string // lease token of the holder the last lease call saw
	for {
		r.mark() // callers that joined so far are covered by what this lease call reads
		taken := time.Now()
		lr, err := e.lease(ctx, r.key, r.token, "")
		if err = e.redisResult(ctx, err); err != nil {
			return zero, validAll, err
		}
		switch lr.status {
		case leaseAcquired:
			r.ver = lr.ver
			if _, lost := e.confirmLeases(ctx, []item{r.item}, taken); len(lost) > 0 {
				break // lapsed: wait for whoever took it, or take it back
			}
			return e.loadLeased(ctx, r)
		case leaseNoop:
			if v, err, ok := e.decodeFresh(ctx, r.key, lr.entry); ok {
				return v, validMarked, err
			}
			continue
		}
		// Held by another caller (or lost): wait for its notification.
		holder = ""
		if lr.status == leaseHeld {
			holder = lr.ver
		}
		if r.stale == nil && lr.entry != nil {
			r.stale = e.classify(lr.entry, 0).stale()
		}
		if w == nil {
			e.ctr.inc(EventLockWait)
			w = e.c.hub.register(ctx, r.key)
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
			if v, ok := e.serveStale(r.stale); ok {
				return v, validAll, nil
			}
			return zero, validAll, fmt.Errorf("%w: %s %q after %v", ErrWaitTimeout, e.name, r.id, e.p.WaitTimeout)
		case <-w.wake:
			// The holder seen above stored after this caller's last lease
			// call, which covers the callers joined before its mark.
			if b, ok := w.stored(r.key, holder); ok {
				if v, err, ok := e.classify(b, 0).current(); ok {
					return v, validMarked, err
				}
			}
		case <-tick.C:
		}
		tick.Reset(min(e.c.recheck, e.p.WaitTimeout))
	}
}

// loadLeased loads r, whose lease this caller holds, renewing the lease
// until the result is stored (see finish). A failed load, or a loader that
// calls runtime.Goexit, gives the lease up, which wakes its waiters.
func (e *Entity[T]) loadLeased(ctx context.Context, r request[T]) (T, outcome, error) {
	defer e.keepLeases(ctx, []item{r.item})()
	returned := false
	defer e.releaseUnlessReturned(ctx, []item{r.item}, &returned)
	v, d, err := e.invoke(withRequired(ctx, r.ver), r.id, r.load)
	returned = true
	return e.finish(ctx, r, v, d, err)
}

// loadAndStore is a miss for None and SingleFlight: read the version (or
// a fresh entry stored since the miss), load, store unless invalidated
// meanwhile. A Redis failure before the load returns errFailOpen.
func (e *Entity[T]) loadAndStore(ctx context.Context, r request[T]) (T, outcome, error) {
	var zero T
	r.mark()
	ver, entry, err := e.readVersion(ctx, r.key)
	if err = e.redisResult(ctx, err); err != nil {
		return zero, validAll, err
	}
	if entry != nil {
		if v, err, ok := e.decodeFresh(ctx, r.key, entry); ok {
			return v, validMarked, err
		}
	}
	r.ver = ver
	v, d, err := e.invoke(withRequired(ctx, ver), r.id, r.load)
	return e.finish(ctx, r, v, d, err)
}

// finish stores a load's outcome (a value, or a "not found" when NullTTL
// is set) under its version, releasing its lease if any, and returns
// Get's result with the outcome for the callers sharing the load.
func (e *Entity[T]) finish(ctx context.Context, r request[T], v T, d time.Duration, err error) (T, outcome, error) {
	out := validAll
	switch {
	case err == nil:
		r.mark()
		out = e.store(ctx, r.item, v, true, d)
	case errors.Is(err, ErrNotFound) && e.p.NullTTL > 0:
		r.mark()
		out = e.store(ctx, r.item, v, false, d)
	case errors.Is(err, ErrNotFound):
		e.releaseLeases(ctx, []item{r.item})
		r.mark()
		out = e.verify(ctx, r.item)
	default:
		e.releaseLeases(ctx, []item{r.item})
	}
	v, err = e.result(v, err, r.stale)
	return v, out, err
}

// store writes the entry with fill.lua, which refuses it if the version
// changed. It runs on a detached context: the load is done, and the lease
// must be released even if the caller has gone.
func (e *Entity[T]) store(ctx context.Context, it item, v T, found bool, d time.Duration) outcome {
	entry, px, err := e.makeEntry(v, found, d)
	if err != nil {
		e.ctr.inc(EventCacheError)
		e.releaseLeases(ctx, []item{it})
		return e.verify(ctx, it)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	call := e.fillCall(it, entry, px)
	n, err := call.Script.Run(wctx, e.c.client, call.Keys, call.Args...).Int()
	if e.redisResult(wctx, err) != nil {
		return validLeader
	}
	if !e.filled(it.key, n) {
		return validLeader
	}
	return validMarked
}

// verify checks that it's version is still current, for a load whose
// result was not stored: validMarked if so, validLeader otherwise.
func (e *Entity[T]) verify(ctx context.Context, it item) outcome {
	cur, err := e.c.client.Get(ctx, it.key+":ver").Result()
	if e.redisResult(ctx, err) != nil || cur != it.ver {
		return validLeader
	}
	return validMarked
}

// result maps a load's outcome to Get's: ErrNotFound plain, a stale value
// within Grace instead of an error.
func (e *Entity[T]) result(v T, err error, st *stale[T]) (T, error) {
	var zero T
	switch {
	case err == nil:
		return v, nil
	case errors.Is(err, ErrNotFound):
		return zero, ErrNotFound
	}
	if sv, ok := e.serveStale(st); ok {
		return sv, nil
	}
	return zero, err
}

// serveStale returns st's value if it is still within Grace.
func (e *Entity[T]) serveStale(st *stale[T]) (T, bool) {
	if st == nil || e.graceM <= 0 || time.Now().UnixMilli() >= st.expiry+e.graceM {
		var zero T
		return zero, false
	}
	e.ctr.inc(EventStaleServed)
	return st.v, true
}
