package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// leasedMany is GetMany's miss path for Mutex, AsyncRefresh and
// EarlyRefresh, the batch form of leased: it takes the rebuild leases of
// ids in one round trip and loads the ids it got in one call (leases renewed
// until stored); it then waits for the ids leased by other callers, woken
// by the shared value-ready subscription, and re-checks them (one round
// trip again) once all of them were announced, or every recheck period.
// A re-check serves the ids stored meanwhile and takes the leases given up
// by failed holders, whose ids this caller then loads. The wait for others
// is bounded by WaitTimeout, counted from its start; Redis errors fall back
// to loading directly.
func (e *Entity[T]) leasedMany(ctx context.Context, ids, keyList []string, stales map[string]*stale[T], load func(context.Context, []string) (map[string]T, error), out map[string]T) (map[string]T, error) {
	var w *waiter
	var deadline, tick *time.Timer
	for {
		if w != nil {
			w.reset() // what is announced from now on is news to this round
		}
		held, err := e.leaseRound(ctx, ids, keyList, stales, load, out)
		if err != nil || len(held) == 0 {
			return out, err
		}
		ids, keyList = pick(ids, held), pick(keyList, held)
		if w == nil {
			for range ids {
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
				return out, ctx.Err()
			case <-deadline.C:
				return e.waitTimedOut(ctx, ids, keyList, stales, out)
			case <-w.wake:
			case <-tick.C:
				break wait
			}
		}
		tick.Reset(min(e.c.recheck, e.p.WaitTimeout))
	}
}

// leaseRound tries the leases of ids in one pipeline: entries found fresh
// go to out, the ids whose leases it takes are loaded and stored, and the
// indexes of the ids leased by others are returned. On a Redis error it
// loads every id directly. On a load error it returns the error, with
// stale values within Grace in out for the ids it leaves.
func (e *Entity[T]) leaseRound(ctx context.Context, ids, keyList []string, stales map[string]*stale[T], load func(context.Context, []string) (map[string]T, error), out map[string]T) (held []int, err error) {
	tokens, calls := e.leaseCalls(keyList, nil)
	if err := runScripts(ctx, e.c.client, leaseScript, calls); err != nil {
		e.releaseTaken(ctx, keyList, tokens, calls)
		failed, cerr := e.c.redisErr(ctx, err)
		if cerr != nil {
			return nil, cerr
		}
		if failed {
			e.ctr.inc(EventCacheError)
		}
		_, err = e.loadManyDirect(ctx, ids, load, out)
		return nil, err
	}
	e.c.br.success()
	var mine []int
	var vers []string
	for i := range calls {
		res, _ := calls[i].cmd.Slice()
		r, _ := parseLease(res)
		switch r.status {
		case leaseAcquired:
			mine = append(mine, i)
			vers = append(vers, r.ver)
			continue
		case leaseNoop:
			if v, err, ok := e.decodeFresh(ctx, keyList[i], r.entry); ok {
				if err == nil {
					out[ids[i]] = v
				}
				continue
			}
			// Corrupt, and deleted: the next round rebuilds it.
		case leaseHeld:
			if stales[ids[i]] == nil {
				if st := e.staleOf(r.entry); st != nil {
					stales[ids[i]] = st
				}
			}
		}
		held = append(held, i)
	}
	if len(mine) == 0 {
		return held, nil
	}
	err = e.loadLeasedMany(ctx, pick(ids, mine), pick(keyList, mine), vers, pick(tokens, mine), load, out)
	if err != nil {
		for _, id := range ids { // the failed ids and the ones left waiting
			if _, ok := out[id]; !ok {
				if v, ok := e.serveStale(stales[id]); ok {
					out[id] = v
				}
			}
		}
		return nil, err
	}
	return held, nil
}

// loadLeasedMany loads ids, whose leases (tokens) this caller holds, in one
// call, renewing the leases until the values are stored under vers. A
// failed load gives the leases up, which wakes their waiters.
func (e *Entity[T]) loadLeasedMany(ctx context.Context, ids, keyList, vers, tokens []string, load func(context.Context, []string) (map[string]T, error), out map[string]T) error {
	defer e.keepLeases(ctx, keyList, tokens)()
	found, d, err := e.invokeMany(ctx, ids, load)
	if err != nil && !errors.Is(err, ErrNotFound) {
		e.releaseLeases(ctx, keyList, tokens)
		return err
	}
	e.storeMany(ctx, ids, keyList, vers, tokens, found, d)
	for _, id := range ids {
		if v, ok := found[id]; ok {
			out[id] = v
		}
	}
	return nil
}

// releaseTaken gives up the leases that a failed lease pipeline took.
func (e *Entity[T]) releaseTaken(ctx context.Context, keyList, tokens []string, calls []scriptCall) {
	var relKeys, relTokens []string
	for i := range calls {
		if res, err := calls[i].cmd.Slice(); err == nil && len(res) > 0 && res[0] == int64(leaseAcquired) {
			relKeys = append(relKeys, keyList[i])
			relTokens = append(relTokens, tokens[i])
		}
	}
	e.releaseLeases(ctx, relKeys, relTokens)
}

// staleOf decodes a value entry that lease.lua returned with a held lease,
// to be served within Grace if waiting fails; nil if there is none.
func (e *Entity[T]) staleOf(entry []byte) *stale[T] {
	if entry == nil {
		return nil
	}
	h, payload, err := decodeEntry(entry)
	if err != nil || h.null {
		return nil
	}
	var v T
	if e.c.codec.Unmarshal(payload, &v) != nil {
		return nil
	}
	return &stale[T]{v: v, expiry: h.expiry}
}

// waitTimedOut ends a wait that reached WaitTimeout: one last read of the
// ids still awaited, then, for each id that is still not there, what Get
// does on a timeout (counted; a stale value within Grace, or
// ErrWaitTimeout).
func (e *Entity[T]) waitTimedOut(ctx context.Context, ids, keyList []string, stales map[string]*stale[T], out map[string]T) (map[string]T, error) {
	raws, err := mget(ctx, e.c.client, keyList)
	if err != nil {
		failed, cerr := e.c.redisErr(ctx, err)
		if cerr != nil {
			return out, cerr
		}
		if failed {
			e.ctr.inc(EventCacheError)
		}
		raws = nil
	} else {
		e.c.br.success()
	}
	now := time.Now().UnixMilli()
	var late []string
	for i, id := range ids {
		if i < len(raws) {
			if s, ok := raws[i].(string); ok {
				if v, err, ok := e.decodeCurrent([]byte(s), now); ok {
					if err == nil {
						out[id] = v
					}
					continue
				}
			}
		}
		e.ctr.inc(EventLockTimeout)
		if v, ok := e.serveStale(stales[id]); ok {
			out[id] = v
			continue
		}
		late = append(late, id)
	}
	if len(late) == 0 {
		return out, nil
	}
	return out, fmt.Errorf("%w: %s: %d ids (%q first) after %v", ErrWaitTimeout, e.name, len(late), late[0], e.p.WaitTimeout)
}

// decodeCurrent decodes an entry read at now if it is fresh: a value, or
// ErrNotFound for a null entry. ok is false for an expired or corrupt one.
func (e *Entity[T]) decodeCurrent(entry []byte, now int64) (v T, err error, ok bool) {
	h, payload, derr := decodeEntry(entry)
	if derr != nil || now >= h.expiry {
		return v, nil, false
	}
	if h.null {
		return v, ErrNotFound, true
	}
	if e.c.codec.Unmarshal(payload, &v) != nil {
		return v, nil, false
	}
	return v, nil, true
}
