package cacheaside

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/token"
)

// Lease statuses returned by lease.lua.
const (
	leaseHeld     = 0 // another caller holds the lease
	leaseAcquired = 1 // ours: load, then fill.lua with the version
	leaseNoop     = 2 // nothing to rebuild: a fresh entry (miss mode) or a changed one (refresh mode)
)

// defaultRecheck is how often a waiter re-checks without a notification,
// so that a lost message or a crashed lease holder delays it but never
// hangs it beyond WaitTimeout.
const defaultRecheck = 100 * time.Millisecond

type leaseReply struct {
	status int64
	ver    string // the version (leaseAcquired) or the holder's lease token (leaseHeld)
	entry  []byte // nil when there is none
}

// parseLease reads lease.lua's reply.
func parseLease(res []any) (leaseReply, error) {
	var r leaseReply
	if len(res) < 1 {
		return r, fmt.Errorf("cacheaside: lease.lua returned %d values", len(res))
	}
	r.status, _ = res[0].(int64)
	if len(res) > 1 {
		r.ver, _ = res[1].(string)
	}
	if len(res) > 2 {
		if s, ok := res[2].(string); ok {
			r.entry = []byte(s)
		}
	}
	return r, nil
}

// leaseCall is the lease.lua call that takes the rebuild lease of it
// (whose token it carries): for a miss when observed is "", else for a
// refresh of the entry whose header was observed.
func (e *Entity[T]) leaseCall(it item, observed string, now int64) script.Call {
	return script.Call{
		Script: leaseScript,
		Keys:   []string{it.key, it.key + ":lock", it.key + ":ver"},
		Args:   []any{it.token, e.lockPX, token.New(), e.verPX, now, observed},
	}
}

// takeLeases tries the leases of items in one pipeline (for a miss when
// observed is nil, else for a refresh of the entries whose headers were
// observed). It returns the items whose leases it took, with their
// versions, and the lease.lua replies of all of them by index. A Redis
// error gives up the leases taken and returns errFailOpen (or ctx's
// error).
func (e *Entity[T]) takeLeases(ctx context.Context, items []item, observed []string) (got []item, replies []leaseReply, err error) {
	now := time.Now().UnixMilli()
	calls := make([]script.Call, len(items))
	for i := range items {
		items[i].token = token.New()
		obs := ""
		if observed != nil {
			obs = observed[i]
		}
		calls[i] = e.leaseCall(items[i], obs, now)
	}
	err = script.RunMany(ctx, e.c.client, calls)
	replies = make([]leaseReply, len(items))
	for i := range calls {
		if res, cerr := calls[i].Cmd.Slice(); cerr == nil {
			replies[i], _ = parseLease(res)
		}
		if replies[i].status == leaseAcquired {
			it := items[i]
			it.ver = replies[i].ver
			got = append(got, it)
		}
	}
	if err = e.redisResult(ctx, err); err != nil {
		e.releaseLeases(ctx, got)
		return nil, nil, err
	}
	return got, replies, nil
}

// confirmLeases is the last check before loading items, whose leases this
// caller took with a lease call sent at taken: it splits them into those
// still held (kept) and those lost, which it counts. A lease taken less
// than a renewal period (LockTTL/3) ago has at least two thirds of its
// lifetime left, so the check costs nothing unless the caller was held up
// (CPU starvation, a GC pause) since; then one round trip renews the
// leases still held and finds those that lapsed, which another caller may
// have taken (and loaded) meanwhile. On a Redis error every item is kept:
// the load goes ahead, and its store will tell.
func (e *Entity[T]) confirmLeases(ctx context.Context, items []item, taken time.Time) (kept, lost []item) {
	if time.Since(taken) < e.p.LockTTL/3 {
		return items, nil
	}
	held, err := e.extendLeases(ctx, items)
	if err != nil {
		return items, nil
	}
	for i, it := range items {
		if held[i] {
			kept = append(kept, it)
		} else {
			e.leaseLost(it.key)
			lost = append(lost, it)
		}
	}
	return kept, lost
}
