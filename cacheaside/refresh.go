package cacheaside

import (
	"context"
	"errors"
	"time"
)

// refresh recomputes an entry whose header the caller saw, under the
// lease; it does nothing if another caller holds the lease or the entry
// changed. It reports whether it stored a new value.
func (e *Entity[T]) refresh(ctx context.Context, key, id string, load func(context.Context, string) (T, error), observed string) (T, bool) {
	var zero T
	token := newToken()
	r, err := e.lease(ctx, key, token, observed)
	if err != nil {
		if failed, _ := e.c.redisErr(ctx, err); failed {
			e.ctr.inc(EventCacheError)
		}
		return zero, false
	}
	e.c.br.success()
	if r.status != leaseAcquired {
		return zero, false
	}
	defer e.keepLeases(ctx, []string{key}, []string{token})()
	v, d, err := e.invoke(ctx, id, load)
	if err == nil {
		e.ctr.inc(EventRefresh)
	}
	_, _, _ = e.finish(ctx, key, r.ver, token, v, d, err, nil, noMark)
	return v, err == nil
}

// refreshAsync starts a background refresh of id unless one runs in this
// process already. The refresh runs on a context detached from ctx (its
// values kept), bounded by RefreshTimeout and ended by Close.
func (e *Entity[T]) refreshAsync(ctx context.Context, key, id string, load func(context.Context, string) (T, error), hdr []byte) {
	if _, busy := e.refreshing.LoadOrStore(id, struct{}{}); busy {
		return
	}
	observed := string(hdr)
	if !e.c.goBackground(func() {
		defer e.refreshing.Delete(id)
		rctx, cancel := e.c.detached(ctx, e.p.RefreshTimeout)
		defer cancel()
		e.refresh(rctx, key, id, load, observed)
	}) {
		e.refreshing.Delete(id)
	}
}

// earlyRefresh is EarlyRefresh's recomputation by the reader XFetch
// picked. It returns the new value, or cur if another caller refreshes
// (or the load fails: cur is still fresh).
func (e *Entity[T]) earlyRefresh(ctx context.Context, key, id string, load func(context.Context, string) (T, error), cur T, hdr []byte) T {
	if _, busy := e.refreshing.LoadOrStore(id, struct{}{}); busy {
		return cur
	}
	defer e.refreshing.Delete(id)
	if v, ok := e.refresh(ctx, key, id, load, string(hdr)); ok {
		return v
	}
	return cur
}

// refreshManyAsync refreshes, in the background and as one batch, the ids
// whose entries (with the headers observed) are due: it takes the leases
// it can, loads those ids in one call and stores them.
func (e *Entity[T]) refreshManyAsync(ctx context.Context, ids, keyList, observed []string, load func(context.Context, []string) (map[string]T, error)) {
	var todoIDs, todoKeys, todoObs []string
	for i, id := range ids {
		if _, busy := e.refreshing.LoadOrStore(id, struct{}{}); !busy {
			todoIDs = append(todoIDs, id)
			todoKeys = append(todoKeys, keyList[i])
			todoObs = append(todoObs, observed[i])
		}
	}
	if len(todoIDs) == 0 {
		return
	}
	done := func() {
		for _, id := range todoIDs {
			e.refreshing.Delete(id)
		}
	}
	if !e.c.goBackground(func() {
		defer done()
		rctx, cancel := e.c.detached(ctx, e.p.RefreshTimeout)
		defer cancel()
		e.refreshMany(rctx, todoIDs, todoKeys, todoObs, load)
	}) {
		done()
	}
}

func (e *Entity[T]) refreshMany(ctx context.Context, ids, keyList, observed []string, load func(context.Context, []string) (map[string]T, error)) {
	tokens, calls := e.leaseCalls(keyList, observed)
	if err := runScripts(ctx, e.c.client, leaseScript, calls); err != nil {
		if failed, _ := e.c.redisErr(ctx, err); failed {
			e.ctr.inc(EventCacheError)
		}
		e.releaseTaken(ctx, keyList, tokens, calls)
		return
	}
	e.c.br.success()
	var gotIDs, gotKeys, gotVers, gotTokens []string
	for i := range calls {
		res, _ := calls[i].cmd.Slice()
		if len(res) > 1 && res[0] == int64(leaseAcquired) {
			ver, _ := res[1].(string)
			gotIDs = append(gotIDs, ids[i])
			gotKeys = append(gotKeys, keyList[i])
			gotVers = append(gotVers, ver)
			gotTokens = append(gotTokens, tokens[i])
		}
	}
	if len(gotIDs) == 0 {
		return
	}
	defer e.keepLeases(ctx, gotKeys, gotTokens)()
	found, d, err := e.invokeMany(ctx, gotIDs, load)
	if err != nil && !errors.Is(err, ErrNotFound) {
		e.releaseLeases(ctx, gotKeys, gotTokens)
		return
	}
	for range gotIDs {
		e.ctr.inc(EventRefresh)
	}
	e.storeMany(ctx, gotIDs, gotKeys, gotVers, gotTokens, found, d)
}

// leaseCalls returns fresh tokens and the lease.lua calls that take the
// rebuild leases of keyList in one pipeline: for a miss when observed is
// nil, else for a refresh of the entries whose headers were observed.
func (e *Entity[T]) leaseCalls(keyList, observed []string) (tokens []string, calls []scriptCall) {
	now := time.Now().UnixMilli()
	tokens = make([]string, len(keyList))
	calls = make([]scriptCall, len(keyList))
	for i, k := range keyList {
		obs := ""
		if observed != nil {
			obs = observed[i]
		}
		tokens[i] = newToken()
		calls[i] = scriptCall{
			keys: []string{k, k + ":lock", k + ":ver"},
			args: []any{tokens[i], e.lockPX, newToken(), e.verPX, now, obs},
		}
	}
	return tokens, calls
}
