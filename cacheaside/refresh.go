package cacheaside

import (
	"context"
	"time"
)

// refresh recomputes r's entry, whose header the caller saw, under the
// lease, by the rules of a miss (see rebuildLeased): it does nothing if
// another caller holds the lease or the entry changed, nor if the lease
// lapsed before the load began (see confirmLeases: whoever took it
// refreshes); a loader that calls runtime.Goexit gives the lease up. It
// reports whether it loaded a new value (stored unless invalidated
// meanwhile).
func (e *Entity[T]) refresh(ctx context.Context, r request[T], observed string) (T, bool) {
	var zero T
	if e.settling() { // see settle.go: nothing would be stored
		return zero, false
	}
	taken := time.Now()
	got, _, err := e.takeLeases(ctx, []item{r.item}, []string{observed})
	if err != nil || len(got) == 0 {
		return zero, false
	}
	if got, _ = e.confirmLeases(ctx, got, taken); len(got) == 0 {
		return zero, false
	}
	r.item, r.stale, r.mark = got[0], nil, noMark
	v, _, err := e.loadOne(ctx, r)
	if err != nil {
		return zero, false
	}
	e.ctr.inc(EventRefresh)
	return v, true
}

// refreshAsync starts a background refresh of r's id unless one runs in
// this process already. The refresh runs on a context detached from ctx
// (its values kept), bounded by RefreshTimeout and ended by Close.
func (e *Entity[T]) refreshAsync(ctx context.Context, r request[T], observed string) {
	if _, busy := e.refreshing.LoadOrStore(r.id, struct{}{}); busy {
		return
	}
	if !e.c.goBackground(func() {
		defer e.refreshing.Delete(r.id)
		rctx, cancel := e.c.detached(ctx, e.p.RefreshTimeout)
		defer cancel()
		e.refresh(rctx, r, observed)
	}) {
		e.refreshing.Delete(r.id)
	}
}

// earlyRefresh is EarlyRefresh's recomputation by the reader XFetch
// picked. It returns the new value, or cur if another caller refreshes
// (or the load fails: cur is still fresh).
func (e *Entity[T]) earlyRefresh(ctx context.Context, r request[T], cur T, observed string) T {
	if _, busy := e.refreshing.LoadOrStore(r.id, struct{}{}); busy {
		return cur
	}
	defer e.refreshing.Delete(r.id)
	if v, ok := e.refresh(ctx, r, observed); ok {
		return v
	}
	return cur
}

// refreshManyAsync refreshes, in the background and as one batch, the
// items whose entries (with the headers observed, by index) are due: it
// takes the leases it can, loads those ids in one call and stores them.
func (e *Entity[T]) refreshManyAsync(ctx context.Context, items []item, observed []string, load BatchLoader[T]) {
	var todo []item
	var todoObs []string
	for i, it := range items {
		if _, busy := e.refreshing.LoadOrStore(it.id, struct{}{}); !busy {
			todo = append(todo, it)
			todoObs = append(todoObs, observed[i])
		}
	}
	if len(todo) == 0 {
		return
	}
	done := func() {
		for _, it := range todo {
			e.refreshing.Delete(it.id)
		}
	}
	if !e.c.goBackground(func() {
		defer done()
		rctx, cancel := e.c.detached(ctx, e.p.RefreshTimeout)
		defer cancel()
		e.refreshMany(rctx, todo, todoObs, load)
	}) {
		done()
	}
}

// refreshMany is the batch form of refresh: it takes the leases of items
// it can, drops those that lapsed before the load began (see
// confirmLeases) and loads the others in one call (see loadMany).
func (e *Entity[T]) refreshMany(ctx context.Context, items []item, observed []string, load BatchLoader[T]) {
	if e.settling() { // see settle.go: nothing would be stored
		return
	}
	taken := time.Now()
	got, _, err := e.takeLeases(ctx, items, observed)
	if err != nil || len(got) == 0 {
		return
	}
	if got, _ = e.confirmLeases(ctx, got, taken); len(got) == 0 {
		return
	}
	if _, err := e.loadMany(ctx, got, load); err != nil {
		return
	}
	for range got {
		e.ctr.inc(EventRefresh)
	}
}

// ids returns the ids of items.
func ids(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.id
	}
	return out
}
