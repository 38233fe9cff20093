package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/token"
)

// This file is a miss, top to bottom, for Get and GetMany alike: miss (Get)
// checks the filter and shares rebuildOne through the flight group;
// rebuildOne, like GetMany's rebuildMany, makes a claim per id and hands
// the claims to rebuildClaims, which picks the strategy's rebuild.
// rebuildLeased (Mutex, AsyncRefresh, EarlyRefresh) runs rounds of lease
// calls (leaseRound), loads the leases taken, and waits for the others'
// announcements (takeAnnounced) up to WaitTimeout (waitTimedOut);
// rebuildVersioned (None, SingleFlight) reads the versions and loads. Get's
// load is loadOne: finish stores its result, version-checked, and maps it
// to Get's answer (result). The lease calls are in lease.go, the stores'
// scripts in load.go, GetMany's batch load in getmany_rebuild.go.

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
// error matching errFailOpen, that Redis failed before the load began (or
// that the Cache settles: the load must not be stored).
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
	if e.settling() {
		// A load now may be older than a write whose invalidation waits
		// for its retry (see settle.go): load, uncached.
		e.ctr.inc(EventBypass)
		return zero, false, errFailOpen
	}
	if !e.p.Strategy.shares() || !r.share {
		r.mark = noMark
		v, _, err = e.rebuildOne(ctx, r)
		return v, false, err
	}
	return e.flight.do(ctx, r.id, func(ctx context.Context, mark func()) (T, outcome, error) {
		r.mark = mark
		return e.rebuildOne(ctx, r)
	})
}

// rebuildOne is Get's miss as a rebuild of one claim (see rebuildClaims),
// loaded by loadOne. In this process callers share one rebuildOne through
// the flight group. A Redis failure before the load returns errFailOpen.
func (e *Entity[T]) rebuildOne(ctx context.Context, r request[T]) (T, outcome, error) {
	c := &claim[T]{item: r.item, stale: r.stale}
	err := e.rebuildClaims(ctx, []*claim[T]{c}, r.mark, func(ctx context.Context, _ []*claim[T]) error {
		r.item, r.stale = c.item, c.stale
		c.answer(e.loadOne(ctx, r))
		return nil
	})
	if err != nil && !c.done {
		var zero T
		return zero, validAll, err
	}
	return c.v, c.out, c.err
}

// claim is one id of a rebuild and, once answered, its answer: a
// value or an error (ErrNotFound for an absent id), with the outcome that
// tells which of the callers sharing Get's rebuild may use it.
type claim[T any] struct {
	item
	stale  *stale[T] // the value to serve within Grace if the load fails, or nil
	holder string    // the lease token of the holder the last round saw, or ""

	done bool
	v    T
	err  error
	out  outcome
}

func (c *claim[T]) answer(v T, out outcome, err error) {
	c.v, c.out, c.err, c.done = v, out, err, true
}

// claimLoader loads, in one call, the claims a rebuild hands it (their
// items carry the versions read and the leases taken for them), stores
// the results and answers the claims. It returns an error only for a
// load that failed as a whole, whose claims it leaves open.
type claimLoader[T any] func(ctx context.Context, got []*claim[T]) error

// rebuildClaims is the miss of Get (one claim, see rebuildOne) and GetMany
// (see rebuildMany): rebuildLeased for Mutex, AsyncRefresh and
// EarlyRefresh, rebuildVersioned for None and SingleFlight. mark is called
// before each Redis step whose reply can answer a claim (see validMarked).
func (e *Entity[T]) rebuildClaims(ctx context.Context, open []*claim[T], mark func(), load claimLoader[T]) error {
	if e.p.Strategy.leases() {
		return e.rebuildLeased(ctx, open, mark, load)
	}
	return e.rebuildVersioned(ctx, open, mark, load)
}

// rebuildLeased is the rebuild of Mutex, AsyncRefresh and EarlyRefresh.
// Each round takes the rebuild leases of the claims still open in one
// round trip, mark() just before it: a fresh entry found answers its claim;
// the claims whose leases it took, and still holds when the load begins
// (see confirmLeases), go to load in one call, which answers them (or
// returns its error); the others, leased by other callers in any process,
// wait. Once every one of them was announced stored (or given up) by its
// holder, or every recheck period, the entries their holders sent answer
// them, and the rest start another round: what a holder stored without
// sending, or gave up after a failed load, is found or leased then. The
// wait is bounded by WaitTimeout, counted from its start (see
// waitTimedOut).
//
// A Redis error in a round returns errFailOpen (or ctx's error) and leaves
// the open claims unanswered. A load error answers them with their stale
// values within Grace, where they have one, and is returned.
func (e *Entity[T]) rebuildLeased(ctx context.Context, open []*claim[T], mark func(), load claimLoader[T]) error {
	var w *waiter
	var deadline, tick *time.Timer
	for {
		if w != nil {
			w.reset() // what is announced from now on is news to this round
		}
		mark() // callers that joined so far are covered by what this round reads
		waiting, again, err := e.leaseRound(ctx, open, load)
		if err != nil || len(waiting) == 0 {
			return err
		}
		open = waiting
		if again {
			continue // an entry did not decode and was deleted: lease it again
		}
		keyList := keysOfClaims(open)
		if w == nil {
			for range open {
				e.ctr.inc(EventLockWait)
			}
			w = e.c.hub.register(ctx, keyList...)
			defer e.c.hub.unregister(w)
			deadline = time.NewTimer(e.p.WaitTimeout)
			defer deadline.Stop()
			tick = time.NewTimer(min(e.c.recheck, e.p.WaitTimeout))
			defer tick.Stop()
			continue // re-check now that no announcement can be missed
		}
	wait:
		for !w.allReady(keyList) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-deadline.C:
				mark()
				return e.waitTimedOut(ctx, open)
			case <-w.wake:
			case <-tick.C:
				break wait
			}
		}
		if open = e.takeAnnounced(w, open); len(open) == 0 {
			return nil
		}
		tick.Reset(min(e.c.recheck, e.p.WaitTimeout))
	}
}

// leaseRound is one round of rebuildLeased: it takes the leases of the
// open claims in one pipeline, answers the claims whose entries it finds
// fresh, loads those whose leases it took and still holds, and returns the
// others, leased by other callers (or lost). again reports an entry that
// did not decode, deleted meanwhile: its claim is among those returned.
func (e *Entity[T]) leaseRound(ctx context.Context, open []*claim[T], load claimLoader[T]) (waiting []*claim[T], again bool, err error) {
	items := make([]item, len(open))
	for i, c := range open {
		items[i] = c.item
	}
	taken := time.Now()
	_, replies, err := e.takeLeases(ctx, items, nil)
	if err != nil {
		return nil, false, err
	}
	var got []*claim[T]
	for i, c := range open {
		r := replies[i]
		c.holder = ""
		switch r.status {
		case leaseAcquired:
			c.item = items[i]
			c.ver = r.ver
			got = append(got, c)
			continue
		case leaseNoop:
			if v, err, ok := e.decodeFresh(ctx, c.key, r.entry); ok {
				c.answer(v, validMarked, err)
				continue
			}
			again = true
		case leaseHeld:
			c.holder = r.ver
			if c.stale == nil && r.entry != nil {
				c.stale = e.classify(r.entry, 0).stale()
			}
		}
		waiting = append(waiting, c)
	}
	if len(got) == 0 {
		return waiting, again, nil
	}
	if _, lost := e.confirmLeases(ctx, itemsOfClaims(got), taken); len(lost) > 0 {
		got, waiting = dropLost(got, lost, waiting) // waited for like the ids leased by others
		if len(got) == 0 {
			return waiting, again, nil
		}
	}
	if err := load(ctx, got); err != nil {
		e.answerStale(open) // the failed claims and the ones left waiting
		return nil, false, err
	}
	return waiting, again, nil
}

// dropLost splits got into the claims whose leases are still held and
// those lost (see confirmLeases), which it appends to waiting.
func dropLost[T any](got []*claim[T], lost []item, waiting []*claim[T]) ([]*claim[T], []*claim[T]) {
	var held []*claim[T]
	gone := make(map[string]bool, len(lost))
	for _, it := range lost {
		gone[it.key] = true
	}
	for _, c := range got {
		if gone[c.key] {
			waiting = append(waiting, c)
		} else {
			held = append(held, c)
		}
	}
	return held, waiting
}

// takeAnnounced answers the open claims whose holders, as the last round
// saw them, sent the entries they stored, and returns the others. Such an
// entry was stored after that round's lease call, so it covers the callers
// its mark covers.
func (e *Entity[T]) takeAnnounced(w *waiter, open []*claim[T]) []*claim[T] {
	var rest []*claim[T]
	for _, c := range open {
		if b, ok := w.stored(c.key, c.holder); ok {
			if v, err, ok := e.classify(b, 0).current(); ok {
				c.answer(v, validMarked, err)
				continue
			}
		}
		rest = append(rest, c)
	}
	return rest
}

// waitTimedOut ends a wait that reached WaitTimeout: one last read of the
// open claims, then, for each claim that is still not there, what a
// timeout does (counted; a stale value within Grace, or ErrWaitTimeout).
func (e *Entity[T]) waitTimedOut(ctx context.Context, open []*claim[T]) error {
	raws, err := e.c.topo.MGet(ctx, keysOfClaims(open))
	if err = e.redisResult(ctx, err); err != nil {
		if !errors.Is(err, errFailOpen) {
			return err
		}
		raws = nil
	}
	now := time.Now().UnixMilli()
	var late []string
	for i, c := range open {
		if i < len(raws) {
			if s, ok := raws[i].(string); ok {
				if v, err, ok := e.classify([]byte(s), now).current(); ok {
					c.answer(v, validMarked, err)
					continue
				}
			}
		}
		e.ctr.inc(EventLockTimeout)
		if v, ok := e.serveStale(c.stale); ok {
			c.answer(v, validAll, nil)
			continue
		}
		late = append(late, c.id)
	}
	switch len(late) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: %s %q after %v", ErrWaitTimeout, e.name, late[0], e.p.WaitTimeout)
	}
	return fmt.Errorf("%w: %s: %d ids (%q first) after %v", ErrWaitTimeout, e.name, len(late), late[0], e.p.WaitTimeout)
}

// rebuildVersioned is the rebuild of None and SingleFlight: one round
// trip, mark() just before it, reads the versions of the claims (or the
// fresh entries stored since the miss, which answer theirs), and load
// loads the others, to be stored only if their versions still hold. A
// Redis error returns errFailOpen (or ctx's error) and leaves the claims
// open; a load error answers them with their stale values within Grace,
// where they have one, and is returned.
func (e *Entity[T]) rebuildVersioned(ctx context.Context, open []*claim[T], mark func(), load claimLoader[T]) error {
	mark()
	now := time.Now().UnixMilli()
	calls := make([]script.Call, len(open))
	for i, c := range open {
		calls[i] = script.Call{Script: versionScript, Keys: []string{c.key, c.key + ":ver"}, Args: []any{token.New(), e.verPX, now}}
	}
	if err := e.redisResult(ctx, script.RunMany(ctx, e.c.client, calls)); err != nil {
		return err
	}
	var todo []*claim[T]
	for i, c := range open {
		res, _ := calls[i].Cmd.Slice()
		ver, entry, _ := parseVersion(res)
		if entry != nil {
			if v, err, ok := e.decodeFresh(ctx, c.key, entry); ok {
				c.answer(v, validMarked, err)
				continue
			}
		}
		c.ver = ver
		todo = append(todo, c)
	}
	if len(todo) == 0 {
		return nil
	}
	if err := load(ctx, todo); err != nil {
		e.answerStale(todo)
		return err
	}
	return nil
}

// loadOne loads r and stores the result (see finish). Under a lease
// (r.token set) it renews the lease until the result is stored; a failed
// load, or a loader that calls runtime.Goexit, gives the lease up, which
// wakes its waiters.
func (e *Entity[T]) loadOne(ctx context.Context, r request[T]) (T, outcome, error) {
	if r.token != "" {
		defer e.keepLeases(ctx, []item{r.item})()
	}
	returned := false
	defer e.releaseUnlessReturned(ctx, []item{r.item}, &returned)
	lctx, rq := withRequired(ctx, r.ver)
	v, d, err := e.invoke(lctx, r.id, r.load)
	returned = true
	r.up = rq.upgrade(r.ver)
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
	if e.settling() { // see settle.go: the load may be older than a write whose invalidation waits
		e.rejectedSet(it.key, rejectedSettling)
		e.releaseLeases(ctx, []item{it})
		return validLeader
	}
	entry, px, err := e.makeEntry(v, found, d)
	if err != nil {
		e.ctr.inc(EventCacheError)
		e.releaseLeases(ctx, []item{it})
		return e.verify(ctx, it)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	marker, epoch := e.c.settle.markerArgs(wctx)
	call := e.fillCall(it, entry, px, marker, epoch)
	n, err := call.Script.Run(wctx, e.c.client, call.Keys, call.Args...).Int()
	if e.redisResult(wctx, err) != nil {
		return validLeader
	}
	if !e.filled(wctx, &call, n) {
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

// answerStale answers the claims of cs still open with their stale values
// within Grace, where they have one.
func (e *Entity[T]) answerStale(cs []*claim[T]) {
	for _, c := range cs {
		if !c.done {
			if v, ok := e.serveStale(c.stale); ok {
				c.answer(v, validAll, nil)
			}
		}
	}
}

// keysOfClaims returns the entry keys of cs.
func keysOfClaims[T any](cs []*claim[T]) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.key
	}
	return out
}

// itemsOfClaims returns the items of cs.
func itemsOfClaims[T any](cs []*claim[T]) []item {
	out := make([]item, len(cs))
	for i, c := range cs {
		out[i] = c.item
	}
	return out
}
