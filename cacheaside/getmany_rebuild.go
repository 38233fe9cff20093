package cacheaside

import (
	"context"
	"errors"
	"slices"
)

// rebuildMany is GetMany's miss: the rebuild Get does (see rebuildClaims)
// with a claim per id, loaded in batches (see loadMany). The values it gets
// go to out; the ids it finds absent are left out. A Redis error falls back
// to loading the ids still open directly.
func (e *Entity[T]) rebuildMany(ctx context.Context, items []item, stales map[string]*stale[T], load BatchLoader[T], out map[string]T) (map[string]T, error) {
	cs := make([]*claim[T], len(items))
	for i, it := range items {
		cs[i] = &claim[T]{item: it, stale: stales[it.id]}
	}
	err := e.rebuildClaims(ctx, cs, noMark, func(ctx context.Context, got []*claim[T]) error {
		found, err := e.loadMany(ctx, itemsOfClaims(got), load)
		if err != nil {
			return err
		}
		for _, c := range got {
			if v, ok := found[c.id]; ok {
				c.answer(v, validAll, nil)
			} else {
				c.answer(v, validAll, ErrNotFound)
			}
		}
		return nil
	})
	var open []item
	for _, c := range cs {
		switch {
		case !c.done:
			open = append(open, c.item)
		case c.err == nil:
			out[c.id] = c.v
		}
	}
	if errors.Is(err, errFailOpen) {
		return e.loadManyDirect(ctx, open, load, out)
	}
	return out, err
}

// loadMany loads items in one call and stores the values found (see
// storeMany), which it returns. Under leases (the items' tokens set) it
// renews them until the values are stored; a failed load, or a loader
// that calls runtime.Goexit, gives them up, which wakes their waiters.
func (e *Entity[T]) loadMany(ctx context.Context, items []item, load BatchLoader[T]) (map[string]T, error) {
	if len(items) > 0 && items[0].token != "" {
		defer e.keepLeases(ctx, items)()
	}
	returned := false
	defer e.releaseUnlessReturned(ctx, items, &returned)
	lctx, rq := withRequiredItems(ctx, items)
	found, d, err := e.invokeMany(lctx, ids(items), load)
	returned = true
	if rq.seen.Load() != 0 {
		// A copy: the lease keeper reads items until the values are stored.
		items = slices.Clone(items)
		for i := range items {
			items[i].up = rq.upgrade(items[i].ver)
		}
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		e.releaseLeases(ctx, items)
		return nil, err
	}
	e.storeMany(ctx, items, found, d)
	return found, nil
}
