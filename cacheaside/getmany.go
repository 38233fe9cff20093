package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

// GetMany returns the values of ids that exist, by id. Hits are read in one
// round trip (one MGET; on a Cluster one MGET per hash slot in one
// pipeline); the misses this caller loads go to one call of load, whose
// result holds the ids it found: ids missing from it are absent
// (null-cached for NullTTL) and missing from GetMany's result too.
// Duplicate ids are read once. Stores after a load are version-checked like
// Get's, in one pipeline.
//
// How misses are loaded follows the Strategy. With None and SingleFlight,
// this caller loads all of them (a batch is not shared with concurrent
// callers). With Mutex, AsyncRefresh and EarlyRefresh, a batch shares loads
// across processes as Get does: GetMany takes the misses' rebuild leases in
// one round trip, loads only the ids whose leases it got (leases renewed
// until stored), and waits for the others, leased by concurrent callers
// here or elsewhere, woken by the shared value-ready subscription. Once all
// of them were announced (or every 100ms) it takes the values their holders
// sent with the announcements (up to 4 KiB an entry) and reads the others
// again in one round trip, loading itself those whose holder gave up (its
// load failed). This is Get's rebuild, for many ids. The wait is bounded
// by WaitTimeout, counted from its start: an id still missing then is
// served stale within Grace if possible, and otherwise left out, GetMany
// returning ErrWaitTimeout with the rest. As with Get, an absent id that is
// not null-cached (NullTTL Disabled) is loaded again by each waiter.
//
// AsyncRefresh and EarlyRefresh values due for a refresh are served and
// refreshed in the background, as one batch under per-id leases. When a
// load fails, GetMany returns what it has (hits, the values it got, and
// stale values within Grace for the ids it lacks) together with the error.
// When Redis fails, the misses are loaded directly, within
// MaxConcurrentLoads.
func (e *Entity[T]) GetMany(ctx context.Context, ids []string, load BatchLoader[T]) (map[string]T, error) {
	out := make(map[string]T, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if load == nil {
		return nil, errNilLoader
	}
	items, err := e.itemsOf(ids)
	if err != nil {
		return nil, err
	}
	g := readGate[T]{e: e}
	held, items, tks, redis := g.passMany(out, items)
	if len(held) > 0 { // their invalidations are pending
		e.ctr.inc(EventBypass)
		if _, err := e.loadManyDirect(ctx, held, load, out); err != nil {
			return nil, err
		}
	}
	if len(items) == 0 {
		return out, nil
	}
	if !redis { // recovery, or the breaker is open
		e.ctr.inc(EventBypass)
		return e.loadManyDirect(ctx, items, load, out)
	}
	raws, err := e.c.topo.MGet(ctx, keysOf(items))
	if err = e.redisResult(ctx, err); err != nil {
		if errors.Is(err, errFailOpen) {
			return e.loadManyDirect(ctx, items, load, out)
		}
		return nil, err
	}
	miss, stales := e.serveMany(ctx, items, tks, raws, out, load)
	miss, err = e.filterMany(ctx, miss)
	if err != nil || len(miss) == 0 {
		return out, err
	}
	if e.settling() { // see settle.go: load, uncached
		e.ctr.inc(EventBypass)
		return e.loadManyDirect(ctx, miss, load, out)
	}
	return e.rebuildMany(ctx, miss, stales, load, out)
}

// itemsOf returns the items of ids, each id once: an invalid id fails the
// whole read before any other work.
func (e *Entity[T]) itemsOf(ids []string) ([]item, error) {
	items := make([]item, 0, len(ids))
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		key, err := e.key(id)
		if err != nil {
			return nil, err
		}
		items = append(items, item{id: id, key: key})
	}
	return items, nil
}

// serveMany is what GetMany does with the entries of items, read from
// Redis (raws, MGET's replies) under the near cache tickets tks (nil
// without a near cache), one decide each: the values it serves go to out,
// those due for a refresh are refreshed in the background, as one batch,
// and the others are returned as misses, with the stale values (by id) a
// failed load may serve within Grace.
func (e *Entity[T]) serveMany(ctx context.Context, items []item, tks []ticket, raws []any, out map[string]T, load BatchLoader[T]) (miss []item, stales map[string]*stale[T]) {
	now := e.now()
	var refresh []item
	var observed []string
	for i, raw := range raws {
		var b []byte
		if s, ok := raw.(string); ok {
			b = []byte(s)
		}
		it := items[i]
		var tk ticket
		if tks != nil { // near cache
			tk = tks[i]
		}
		vw := e.classify(b, now)
		switch e.decide(ctx, tk, it.key, &vw) {
		case serveValue:
			out[it.id] = vw.v
		case serveAndRefresh: // both due and stale values are refreshed in the background
			out[it.id] = vw.v
			refresh = append(refresh, it)
			observed = append(observed, vw.hdr)
		case rebuild:
			if st := vw.stale(); st != nil {
				if stales == nil {
					stales = map[string]*stale[T]{}
				}
				stales[it.id] = st
			}
			miss = append(miss, it)
		}
	}
	if len(refresh) > 0 {
		e.refreshManyAsync(ctx, refresh, observed, load)
	}
	return miss, stales
}

// keysOf returns the entry keys of items.
func keysOf(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.key
	}
	return out
}

// filterMany drops the items the Filter rules out.
func (e *Entity[T]) filterMany(ctx context.Context, items []item) ([]item, error) {
	if e.p.Filter == nil || len(items) == 0 {
		return items, nil
	}
	maybe := make([]bool, len(items))
	if bf, ok := e.p.Filter.(BatchFilter); ok {
		res, err := bf.MightContainMany(ctx, ids(items))
		if err == nil && len(res) != len(items) {
			err = fmt.Errorf("cacheaside: filter answered %d of %d ids", len(res), len(items))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			e.ctr.inc(EventCacheError)
			return items, nil
		}
		copy(maybe, res)
	} else {
		for i, it := range items {
			ok, err := e.p.Filter.MightContain(ctx, it.id)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				e.ctr.inc(EventCacheError)
				ok = true
			}
			maybe[i] = ok
		}
	}
	var keep []item
	for i, ok := range maybe {
		if ok {
			keep = append(keep, items[i])
		} else {
			e.ctr.inc(EventFiltered)
		}
	}
	return keep, nil
}

// storeMany writes the outcome of a batch load for items (values found,
// nulls for the others when NullTTL is set) with fill.lua in one pipeline.
// The items' leases, if any, are released with the stores (waking their
// waiters), and those with nothing to store give theirs up in one more
// pipeline.
func (e *Entity[T]) storeMany(ctx context.Context, items []item, found map[string]T, d time.Duration) {
	calls := make([]script.Call, 0, len(items))
	var release []item // nothing to store
	defer func() { e.releaseLeases(ctx, release) }()
	if e.settling() { // see settle.go
		for _, it := range items {
			e.rejectedSet(it.key, rejectedSettling)
		}
		release = items
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	marker, epoch := e.c.settle.markerArgs(wctx)
	for _, it := range items {
		v, ok := found[it.id]
		if ok || e.p.NullTTL > 0 {
			entry, px, err := e.makeEntry(v, ok, d)
			if err == nil {
				calls = append(calls, e.fillCall(it, entry, px, marker, epoch))
				continue
			}
			e.ctr.inc(EventCacheError)
		}
		release = append(release, it)
	}
	if len(calls) == 0 {
		return
	}
	e.note(wctx, script.RunMany(wctx, e.c.client, calls))
	for i := range calls {
		if n, err := calls[i].Cmd.Int(); err == nil {
			e.filled(wctx, &calls[i], n)
		}
	}
}
