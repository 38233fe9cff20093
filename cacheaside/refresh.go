package cacheaside

import (
	"context"
	"time"
)

// refresh recomputes r's entry, whose header the caller saw, under the
// lease, by the rules of a miss (see rebuildLeased): it does nothing if
// another caller holds the lease (held) or the entry changed, nor if the
// lease lapsed before the load began (see confirmLeases: whoever took it
// refreshes); a loader that calls runtime.Goexit gives the lease up. It
// reports whether it loaded a new value (stored unless invalidated
// meanwhile).
func (e *Entity[T]) refresh(ctx context.Context, r request[T], observed string) (v T, loaded, held bool) {
	var zero T
	if e.settling() { // see settle.go: nothing would be stored
		return zero, false, false
	}
	taken := time.Now()
	got, replies, err := e.takeLeases(ctx, []item{r.item}, []string{observed})
	if err != nil || len(got) == 0 {
		return zero, false, err == nil && replies[0].status == leaseHeld
	}
	if got, _ = e.confirmLeases(ctx, got, taken); len(got) == 0 {
		return zero, false, false
	}
	r.item, r.stale, r.mark = got[0], nil, noMark
	v, _, err = e.loadOne(ctx, r)
	if err != nil {
		return zero, false, false
	}
	e.ctr.inc(EventRefresh)
	return v, true, false
}

// claimRefresh reserves the refresh of id for the caller, who must end it
// with endRefresh: false while a refresh of id runs in this process, and
// for a recheck period after one found the lease held by another caller
// (in any process), who refreshes. Without that pause every read of the
// stale or due entry in this process would send a lease call, and start a
// goroutine for it, for as long as the holder's load takes.
func (e *Entity[T]) claimRefresh(id string) bool {
	_, busy := e.refreshing.LoadOrStore(id, struct{}{})
	return !busy
}

// endRefresh ends the refresh of id claimed with claimRefresh. held says
// that it found the lease held by another caller: the claim then stays
// for a recheck period (see claimRefresh).
func (e *Entity[T]) endRefresh(id string, held bool) {
	if !held {
		e.refreshing.Delete(id)
		return
	}
	time.AfterFunc(e.c.recheck, func() { e.refreshing.Delete(id) })
}

// refreshAsync starts a background refresh of r's id unless one runs in
// this process already, or found the lease held elsewhere less than a
// recheck period ago (see claimRefresh). The refresh runs on a context
// detached from ctx (its values kept), bounded by RefreshTimeout and ended
// by Close.
func (e *Entity[T]) refreshAsync(ctx context.Context, r request[T], observed string) {
	if !e.claimRefresh(r.id) {
		return
	}
	held := false
	if !e.c.goBackground(func() {
		defer func() { e.endRefresh(r.id, held) }()
		rctx, cancel := e.c.detached(ctx, e.p.RefreshTimeout)
		defer cancel()
		_, _, held = e.refresh(rctx, r, observed)
	}) {
		e.endRefresh(r.id, false)
	}
}

// earlyRefresh is EarlyRefresh's recomputation by the reader XFetch
// picked. It returns the new value, or cur if another caller refreshes
// (or the load fails: cur is still fresh).
func (e *Entity[T]) earlyRefresh(ctx context.Context, r request[T], cur T, observed string) T {
	if !e.claimRefresh(r.id) {
		return cur
	}
	var v T
	var loaded, held bool
	defer func() { e.endRefresh(r.id, held) }() // a loader's runtime.Goexit too
	v, loaded, held = e.refresh(ctx, r, observed)
	if loaded {
		return v
	}
	return cur
}

// refreshManyAsync refreshes, in the background and as one batch, the
// items whose entries (with the headers observed, by index) are due and
// whose refreshes it can claim (see claimRefresh): it takes the leases it
// can, loads those ids in one call and stores them.
func (e *Entity[T]) refreshManyAsync(ctx context.Context, items []item, observed []string, load BatchLoader[T]) {
	var todo []item
	var todoObs []string
	for i, it := range items {
		if e.claimRefresh(it.id) {
			todo = append(todo, it)
			todoObs = append(todoObs, observed[i])
		}
	}
	if len(todo) == 0 {
		return
	}
	var held []bool
	done := func() {
		for i, it := range todo {
			e.endRefresh(it.id, i < len(held) && held[i])
		}
	}
	if !e.c.goBackground(func() {
		defer done()
		rctx, cancel := e.c.detached(ctx, e.p.RefreshTimeout)
		defer cancel()
		held = e.refreshMany(rctx, todo, todoObs, load)
	}) {
		done()
	}
}

// refreshMany is the batch form of refresh: it takes the leases of items
// it can, drops those that lapsed before the load began (see
// confirmLeases) and loads the others in one call (see loadMany). held
// reports, by index of items, the leases another caller holds (nil when
// the lease call failed or did not run).
func (e *Entity[T]) refreshMany(ctx context.Context, items []item, observed []string, load BatchLoader[T]) (held []bool) {
	if e.settling() { // see settle.go: nothing would be stored
		return nil
	}
	taken := time.Now()
	got, replies, err := e.takeLeases(ctx, items, observed)
	if err != nil {
		return nil
	}
	held = make([]bool, len(items))
	for i, r := range replies {
		held[i] = r.status == leaseHeld
	}
	if len(got) == 0 {
		return held
	}
	if got, _ = e.confirmLeases(ctx, got, taken); len(got) == 0 {
		return held
	}
	if _, err := e.loadMany(ctx, got, load); err != nil {
		return held
	}
	for range got {
		e.ctr.inc(EventRefresh)
	}
	return held
}

// ids returns the ids of items.
func ids(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.id
	}
	return out
}
