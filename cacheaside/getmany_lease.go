package cacheaside

import (
	"context"
	"errors"
)

// leasedMany is GetMany's miss for Mutex, AsyncRefresh and EarlyRefresh:
// the rebuild Get does (see rebuildLeased) with a claim per id, whose
// loads are batches (see loadLeasedMany). The values it gets go to out;
// the ids it finds absent are left out. Redis errors fall back to loading
// the ids still open directly.
func (e *Entity[T]) leasedMany(ctx context.Context, items []item, stales map[string]*stale[T], load BatchLoader[T], out map[string]T) (map[string]T, error) {
	cs := make([]*claim[T], len(items))
	for i, it := range items {
		cs[i] = &claim[T]{item: it, stale: stales[it.id]}
	}
	err := e.rebuildLeased(ctx, cs, noMark, func(ctx context.Context, got []*claim[T]) error {
		found, err := e.loadLeasedMany(ctx, itemsOfClaims(got), load)
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

// loadLeasedMany loads items, whose leases this caller holds, in one call,
// renewing the leases until the values are stored, and returns the values
// found. A failed load (or a loader that called runtime.Goexit) gives the
// leases up, which wakes their waiters.
func (e *Entity[T]) loadLeasedMany(ctx context.Context, items []item, load BatchLoader[T]) (map[string]T, error) {
	defer e.keepLeases(ctx, items)()
	returned := false
	defer e.releaseUnlessReturned(ctx, items, &returned)
	found, d, err := e.invokeMany(withRequiredItems(ctx, items), ids(items), load)
	returned = true
	if err != nil && !errors.Is(err, ErrNotFound) {
		e.releaseLeases(ctx, items)
		return nil, err
	}
	e.storeMany(ctx, items, found, d)
	return found, nil
}
