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
// until stored; a lease that lapsed before the load began, see
// confirmLeases, is waited for as if another caller held it); it then waits for the ids leased by other callers, woken
// by the shared value-ready subscription, and re-checks them (one round
// trip again) once all of them were announced, or every recheck period.
// A re-check serves the ids stored meanwhile and takes the leases given up
// by failed holders, whose ids this caller then loads. The wait for others
// is bounded by WaitTimeout, counted from its start; Redis errors fall back
// to loading directly.
func (e *Entity[T]) leasedMany(ctx context.Context, items []item, stales map[string]*stale[T], load BatchLoader[T], out map[string]T) (map[string]T, error) {
	var w *waiter
	var deadline, tick *time.Timer
	for {
		if w != nil {
			w.reset() // what is announced from now on is news to this round
		}
		held, err := e.leaseRound(ctx, items, stales, load, out)
		if err != nil || len(held) == 0 {
			return out, err
		}
		items = held
		keyList := keysOf(items)
		if w == nil {
			for range items {
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
				return e.waitTimedOut(ctx, items, stales, out)
			case <-w.wake:
			case <-tick.C:
				break wait
			}
		}
		tick.Reset(min(e.c.recheck, e.p.WaitTimeout))
	}
}

// leaseRound tries the leases of items in one pipeline: entries found
// fresh go to out, the items whose leases it takes (and still holds when
// the load begins) are loaded and stored, and the items leased by others
// (or lost) are returned. On a Redis error it loads
// every item directly. On a load error it returns the error, with stale
// values within Grace in out for the items it leaves.
func (e *Entity[T]) leaseRound(ctx context.Context, items []item, stales map[string]*stale[T], load BatchLoader[T], out map[string]T) (held []item, err error) {
	taken := time.Now()
	got, replies, err := e.takeLeases(ctx, items, nil)
	if err != nil {
		if errors.Is(err, errFailOpen) {
			_, err = e.loadManyDirect(ctx, items, load, out)
		}
		return nil, err
	}
	for i, it := range items {
		r := replies[i]
		switch r.status {
		case leaseAcquired:
			continue
		case leaseNoop:
			if v, err, ok := e.decodeFresh(ctx, it.key, r.entry); ok {
				if err == nil {
					out[it.id] = v
				}
				continue
			}
			// Corrupt, and deleted: the next round rebuilds it.
		case leaseHeld:
			if stales[it.id] == nil && r.entry != nil {
				if st := e.classify(r.entry, 0).stale(); st != nil {
					stales[it.id] = st
				}
			}
		}
		held = append(held, it)
	}
	if len(got) == 0 {
		return held, nil
	}
	got, lost := e.confirmLeases(ctx, got, taken)
	held = append(held, lost...) // waited for like the ids leased by others
	if len(got) == 0 {
		return held, nil
	}
	if err = e.loadLeasedMany(ctx, got, load, out); err != nil {
		e.serveStales(items, stales, out) // the failed items and the ones left waiting
		return nil, err
	}
	return held, nil
}

// loadLeasedMany loads items, whose leases this caller holds, in one call,
// renewing the leases until the values are stored, and puts the values
// found into out (nil for a refresh, which serves nobody). A failed load
// (or a loader that called runtime.Goexit) gives the leases up, which
// wakes their waiters.
func (e *Entity[T]) loadLeasedMany(ctx context.Context, items []item, load BatchLoader[T], out map[string]T) error {
	defer e.keepLeases(ctx, items)()
	returned := false
	defer e.releaseUnlessReturned(ctx, items, &returned)
	found, d, err := e.invokeMany(withRequiredItems(ctx, items), ids(items), load)
	returned = true
	if err != nil && !errors.Is(err, ErrNotFound) {
		e.releaseLeases(ctx, items)
		return err
	}
	e.storeMany(ctx, items, found, d)
	if out == nil {
		return nil
	}
	for _, it := range items {
		if v, ok := found[it.id]; ok {
			out[it.id] = v
		}
	}
	return nil
}

// waitTimedOut ends a wait that reached WaitTimeout: one last read of the
// items still awaited, then, for each item that is still not there, what
// Get does on a timeout (counted; a stale value within Grace, or
// ErrWaitTimeout).
func (e *Entity[T]) waitTimedOut(ctx context.Context, items []item, stales map[string]*stale[T], out map[string]T) (map[string]T, error) {
	raws, err := mget(ctx, e.c.client, keysOf(items))
	if err = e.redisResult(ctx, err); err != nil {
		if !errors.Is(err, errFailOpen) {
			return out, err
		}
		raws = nil
	}
	now := time.Now().UnixMilli()
	var late []string
	for i, it := range items {
		if i < len(raws) {
			if s, ok := raws[i].(string); ok {
				if v, err, ok := e.classify([]byte(s), now).current(); ok {
					if err == nil {
						out[it.id] = v
					}
					continue
				}
			}
		}
		e.ctr.inc(EventLockTimeout)
		if v, ok := e.serveStale(stales[it.id]); ok {
			out[it.id] = v
			continue
		}
		late = append(late, it.id)
	}
	if len(late) == 0 {
		return out, nil
	}
	return out, fmt.Errorf("%w: %s: %d ids (%q first) after %v", ErrWaitTimeout, e.name, len(late), late[0], e.p.WaitTimeout)
}
