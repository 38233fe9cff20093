package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"time"
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
// here or elsewhere, woken by the shared value-ready subscription; it reads
// them again once all of them were announced (or every 100ms), and loads
// itself those whose holder gave up (its load failed). The wait is bounded
// by WaitTimeout, counted from its start: an id still missing then is
// served stale within Grace if possible, and otherwise left out, GetMany
// returning ErrWaitTimeout with the rest. As with Get, an absent id that is
// not null-cached (NullTTL 0) is loaded again by each waiter.
//
// AsyncRefresh and EarlyRefresh values due for a refresh are served and
// refreshed in the background, as one batch under per-id leases. When a
// load fails, GetMany returns what it has (hits, the values it got, and
// stale values within Grace for the ids it lacks) together with the error.
// When Redis fails, the misses are loaded directly, within
// MaxConcurrentLoads.
func (e *Entity[T]) GetMany(ctx context.Context, ids []string, load func(ctx context.Context, ids []string) (map[string]T, error)) (map[string]T, error) {
	out := make(map[string]T, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	if load == nil {
		return nil, errNilLoader
	}
	uniq := make([]string, 0, len(ids))
	keyList := make([]string, 0, len(ids))
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
		uniq = append(uniq, id)
		keyList = append(keyList, key)
	}
	uniq, keyList, tks := e.local.getMany(out, uniq, keyList) // near cache: local answers, tickets for the rest
	if len(uniq) == 0 {
		return out, nil
	}
	if !e.c.br.allow() {
		e.ctr.inc(EventBypass)
		return e.loadManyDirect(ctx, uniq, load, out)
	}
	raws, err := mget(ctx, e.c.client, keyList)
	if err != nil {
		failed, cerr := e.c.redisErr(ctx, err)
		if cerr != nil {
			return nil, cerr
		}
		if failed {
			e.ctr.inc(EventCacheError)
		}
		return e.loadManyDirect(ctx, uniq, load, out)
	}
	e.c.br.success()

	now := time.Now().UnixMilli()
	var miss []int // indexes into uniq
	var refresh []int
	var observed []string
	stales := map[string]*stale[T]{}
	for i, raw := range raws {
		s, ok := raw.(string)
		if !ok {
			e.ctr.inc(EventMiss)
			miss = append(miss, i)
			continue
		}
		h, payload, err := decodeEntry([]byte(s))
		if err == nil {
			fresh := now < h.expiry
			if h.null {
				if fresh {
					e.ctr.inc(EventNullHit)
					e.local.putNullAt(tks, i, keyList[i], h.expiry) // near cache
				} else {
					e.ctr.inc(EventMiss)
					miss = append(miss, i)
				}
				continue
			}
			var v T
			if err = e.c.codec.Unmarshal(payload, &v); err == nil {
				switch {
				case fresh:
					e.ctr.inc(EventHit)
					out[uniq[i]] = v
					e.local.putAt(tks, i, keyList[i], v, h.expiry) // near cache
					if e.p.Strategy == EarlyRefresh && e.xfetch(now, h) {
						refresh = append(refresh, i)
						observed = append(observed, s[:headerLen])
					}
					continue
				case e.p.Strategy == AsyncRefresh && now < h.expiry+e.graceM:
					e.ctr.inc(EventStaleServed)
					out[uniq[i]] = v
					refresh = append(refresh, i)
					observed = append(observed, s[:headerLen])
					continue
				}
				stales[uniq[i]] = &stale[T]{v: v, expiry: h.expiry}
				e.ctr.inc(EventMiss)
				miss = append(miss, i)
				continue
			}
		}
		e.corrupt(ctx, keyList[i])
		e.ctr.inc(EventMiss)
		miss = append(miss, i)
	}
	if len(refresh) > 0 {
		e.refreshManyAsync(ctx, pick(uniq, refresh), pick(keyList, refresh), observed, load)
	}
	if len(miss) == 0 {
		return out, nil
	}
	missIDs, missKeys := pick(uniq, miss), pick(keyList, miss)
	missIDs, missKeys, err = e.filterMany(ctx, missIDs, missKeys)
	if err != nil {
		return nil, err
	}
	if len(missIDs) == 0 {
		return out, nil
	}
	if e.p.Strategy >= Mutex {
		return e.leasedMany(ctx, missIDs, missKeys, stales, load, out)
	}

	// Versions first, then the load, then the version-checked stores.
	now = time.Now().UnixMilli()
	calls := make([]scriptCall, len(missKeys))
	for i, k := range missKeys {
		calls[i] = scriptCall{keys: []string{k, k + ":ver"}, args: []any{newToken(), e.verPX, now}}
	}
	if err := runScripts(ctx, e.c.client, versionScript, calls); err != nil {
		failed, cerr := e.c.redisErr(ctx, err)
		if cerr != nil {
			return nil, cerr
		}
		if failed {
			e.ctr.inc(EventCacheError)
		}
		return e.loadManyDirect(ctx, missIDs, load, out)
	}
	// Entries stored by others since the MGET are used as they are.
	var loadIDs, loadKeys, vers []string
	for i := range calls {
		res, _ := calls[i].cmd.Slice()
		ver, entry, _ := parseVersion(res)
		if entry != nil {
			if v, err, ok := e.decodeFresh(ctx, missKeys[i], entry); ok {
				if err == nil {
					out[missIDs[i]] = v
				}
				continue
			}
		}
		loadIDs = append(loadIDs, missIDs[i])
		loadKeys = append(loadKeys, missKeys[i])
		vers = append(vers, ver)
	}
	if len(loadIDs) == 0 {
		return out, nil
	}
	missIDs, missKeys = loadIDs, loadKeys
	found, d, err := e.invokeMany(ctx, missIDs, load)
	if err != nil && !errors.Is(err, ErrNotFound) {
		for _, id := range missIDs {
			if v, ok := e.serveStale(stales[id]); ok {
				out[id] = v
			}
		}
		return out, err
	}
	e.storeMany(ctx, missIDs, missKeys, vers, nil, found, d)
	for _, id := range missIDs {
		if v, ok := found[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

// pick returns s[i] for each i in idx.
func pick(s []string, idx []int) []string {
	out := make([]string, len(idx))
	for j, i := range idx {
		out[j] = s[i]
	}
	return out
}

// filterMany drops the ids the Filter rules out.
func (e *Entity[T]) filterMany(ctx context.Context, ids, keyList []string) ([]string, []string, error) {
	if e.p.Filter == nil {
		return ids, keyList, nil
	}
	maybe := make([]bool, len(ids))
	if bf, ok := e.p.Filter.(BatchFilter); ok {
		res, err := bf.MightContainMany(ctx, ids)
		if err == nil && len(res) != len(ids) {
			err = fmt.Errorf("cacheaside: filter answered %d of %d ids", len(res), len(ids))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			e.ctr.inc(EventCacheError)
			return ids, keyList, nil
		}
		copy(maybe, res)
	} else {
		for i, id := range ids {
			ok, err := e.p.Filter.MightContain(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				e.ctr.inc(EventCacheError)
				ok = true
			}
			maybe[i] = ok
		}
	}
	var keepIDs, keepKeys []string
	for i, ok := range maybe {
		if ok {
			keepIDs = append(keepIDs, ids[i])
			keepKeys = append(keepKeys, keyList[i])
		} else {
			e.ctr.inc(EventFiltered)
		}
	}
	return keepIDs, keepKeys, nil
}

// invokeMany calls a batch loader within the concurrency cap (one slot),
// recovering panics and counting it as one load.
func (e *Entity[T]) invokeMany(ctx context.Context, ids []string, load func(context.Context, []string) (map[string]T, error)) (found map[string]T, d time.Duration, err error) {
	if !e.acquire() {
		return nil, 0, ErrOverloaded
	}
	defer e.release()
	d, err = e.timed(func() (err error) {
		found, err = callLoader(ctx, "", func(ctx context.Context, _ string) (map[string]T, error) {
			return load(ctx, ids)
		})
		return err
	})
	return found, d, err
}

// loadManyDirect is GetMany's fail-open path: load everything, store
// nothing.
func (e *Entity[T]) loadManyDirect(ctx context.Context, ids []string, load func(context.Context, []string) (map[string]T, error), out map[string]T) (map[string]T, error) {
	found, _, err := e.invokeMany(ctx, ids, load)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return out, err
	}
	for _, id := range ids {
		if v, ok := found[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

// storeMany writes the outcome of a batch load for ids (values found, nulls
// for the others when NullTTL is set) with fill.lua in one pipeline.
// tokens, when not nil, are the caller's leases (refresh, and GetMany's
// leased misses): fill.lua releases them and wakes their waiters, and the
// ids with nothing to store give theirs up in one more pipeline.
func (e *Entity[T]) storeMany(ctx context.Context, ids, keyList, vers, tokens []string, found map[string]T, d time.Duration) {
	calls := make([]scriptCall, 0, len(ids))
	var relKeys, relTokens []string // leases to give up: nothing to store
	defer func() { e.releaseLeases(ctx, relKeys, relTokens) }()
	channel := ""
	if tokens != nil {
		channel = e.c.channel
	}
	for i, id := range ids {
		v, ok := found[id]
		if !ok && e.p.NullTTL <= 0 && tokens == nil {
			continue
		}
		token := ""
		if tokens != nil {
			token = tokens[i]
		}
		var entry []byte
		var px int64
		var err error
		if ok || e.p.NullTTL > 0 {
			entry, px, err = e.makeEntry(v, ok, d)
			if err != nil {
				e.ctr.inc(EventCacheError)
			}
		}
		if entry == nil {
			if token != "" {
				relKeys = append(relKeys, keyList[i])
				relTokens = append(relTokens, token)
			}
			continue
		}
		k := keyList[i]
		calls = append(calls, scriptCall{
			keys: []string{k, k + ":ver", k + ":lock"},
			args: []any{vers[i], entry, px, e.verPX, token, channel},
		})
	}
	if len(calls) == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.writeTimeout)
	defer cancel()
	if err := runScripts(wctx, e.c.client, fillScript, calls); err != nil {
		if failed, _ := e.c.redisErr(wctx, err); failed {
			e.ctr.inc(EventCacheError)
		}
	} else {
		e.c.br.success()
	}
	for i := range calls {
		if n, err := calls[i].cmd.Int(); err == nil && n == 0 {
			e.ctr.inc(EventRejectedSet)
		}
	}
}
