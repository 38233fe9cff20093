package cacheaside

import (
	"context"
	"errors"
	"fmt"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/internal/token"
	"github.com/asidekit/asidekit/internal/topology"
)

// Set stores v as id's value (with a jittered TTL) and replaces id's
// version, so that no load that began before Set can overwrite it. Call it
// after the source of truth has v. If Redis fails, an invalidation of id is
// queued for background retry and the error matches
// ErrInvalidationPending; so it does, with Options.ReplicaAcks, when fewer
// replicas confirmed the write.
func (e *Entity[T]) Set(ctx context.Context, id string, v T) error {
	key, err := e.key(id)
	if err != nil {
		return err
	}
	entry, px, err := e.makeEntry(v, true, 0)
	if err != nil {
		return err
	}
	lsn := writeLSN(ctx)
	defer e.local.wrote(ctx, key) // near cache: drop ours (and announce) once Redis has the write
	if e.c.br.Allow() {
		if e.c.acks.n == 0 {
			err = writeScript.Run(ctx, e.c.client, []string{key, key + ":ver"}, token.New(), e.verPX, lsnArg(lsn), entry, px).Err()
		} else {
			calls := []script.Call{{Script: writeScript, Keys: []string{key, key + ":ver"}, Args: []any{token.New(), e.verPX, lsnArg(lsn), entry, px}}}
			var out []writeOutcome
			out, err = e.c.writeAll(ctx, calls)
			if out[0] == writeShort {
				e.ctr.shortfalls.Add(1)
			}
		}
		if errors.Is(err, errShortfall) {
			e.c.answered() // Redis answered; the write is not confirmed
		} else if e.redisResult(ctx, err) == nil {
			return nil
		}
	} else {
		err = fmt.Errorf("breaker open")
		e.ctr.inc(EventBypass)
	}
	e.c.retry.add([]pending{{key: key, verPX: e.verPX, ctr: e.ctr, lsn: lsn}})
	return fmt.Errorf("%w: set %s %q: %w", ErrInvalidationPending, e.name, id, err)
}

// Invalidate deletes the entries of ids and replaces their versions, in
// one pipeline: every load of these ids that began before Invalidate will
// have its store refused. Call it after the source of truth has changed.
// The ids that Redis could not invalidate are queued and retried in the
// background (counted in Stats); the error then matches
// ErrInvalidationPending. With Options.ReplicaAcks, so are the ids whose
// invalidation fewer replicas confirmed. An invalid id fails the whole call before any
// Redis work.
func (e *Entity[T]) Invalidate(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	todo, err := e.pendingOf(ctx, ids)
	if err != nil {
		return err
	}
	var errs [1]error
	invalidateEntities(ctx, e.c, []invalidation{{e, todo}}, errs[:])
	return errs[0]
}

// pendingOf is what Invalidate of ids queues: each id's key once, with
// the entity's version TTL and ctx's write position. An invalid id fails
// them all.
func (e *Entity[T]) pendingOf(ctx context.Context, ids []string) ([]pending, error) {
	todo := make([]pending, 0, len(ids))
	lsn := writeLSN(ctx)
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		key, err := e.key(id)
		if err != nil {
			return nil, err
		}
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		todo = append(todo, pending{key: key, verPX: e.verPX, ctr: e.ctr, lsn: lsn})
	}
	return todo, nil
}

// invalidator is an entity whose invalidations can share a pipeline with
// other entities' of its Cache (every *Entity[T]).
type invalidator interface {
	Name() string
	cache() *Cache
	pendingOf(ctx context.Context, ids []string) ([]pending, error)
	counters() *counters
	dropLocal(ctx context.Context, todo []pending)
	note(ctx context.Context, err error)
}

func (e *Entity[T]) counters() *counters { return e.ctr }

// dropLocal drops this process's near-cache copies of todo's keys (and
// announces them) once Redis has the invalidation.
func (e *Entity[T]) dropLocal(ctx context.Context, todo []pending) { e.local.wrotePending(ctx, todo) }

// invalidation is an Invalidate of entity ent: its queued keys.
type invalidation struct {
	ent  invalidator
	todo []pending
}

// invalidateEntities does the invalidations of entities of Cache c in one
// pipeline (one round trip per node; invalidate), and sets errs[i] to
// what Invalidate of invs[i] alone would have returned: nil, or an error
// matching ErrInvalidationPending for an entity some of whose keys were
// queued for retry.
func invalidateEntities(ctx context.Context, c *Cache, invs []invalidation, errs []error) {
	for _, inv := range invs {
		defer inv.ent.dropLocal(ctx, inv.todo) // near cache: once Redis has the write
	}
	if !c.br.Allow() {
		for i, inv := range invs {
			inv.ent.counters().inc(EventBypass)
			c.retry.add(inv.todo)
			errs[i] = fmt.Errorf("%w: %s: breaker open", ErrInvalidationPending, inv.ent.Name())
		}
		return
	}
	all := invs[0].todo
	if len(invs) > 1 {
		all = nil
		for _, inv := range invs {
			all = append(all, inv.todo...)
		}
	}
	failed, err := invalidate(ctx, c, all)
	if err == nil {
		return
	}
	c.retry.add(failed)
	for i, inv := range invs {
		n := 0
		for _, p := range failed {
			if p.ctr == inv.ent.counters() {
				n++
			}
		}
		if n == 0 && len(failed) > 0 {
			continue
		}
		if !errors.Is(err, errShortfall) {
			inv.ent.note(ctx, err)
		}
		errs[i] = fmt.Errorf("%w: %s (%d of %d ids): %w", ErrInvalidationPending, inv.ent.Name(), n, len(inv.todo), err)
	}
}

// invalidateBatch is the most ids one write.lua call carries on a single
// Redis node: a few hundred microseconds of server time, so that a big
// batch (a bulk write, a CDC transaction) never blocks Redis for long.
const invalidateBatch = 64

// invalidate runs write.lua in delete mode (drop.lua for a pending that
// says drop) for every pending entry in one pipeline (with
// Options.ReplicaAcks, one per master, each followed by WAIT) and returns
// the entries that failed or that too few replicas confirmed (counted).
// On a single node (a *redis.Client, standalone or
// Sentinel) a call carries up to invalidateBatch consecutive ids of the
// same version TTL and write position (they share the call's arguments);
// on a Cluster or a Ring one, since their keys are in different slots or
// shards. An error that matches errShortfall is not a Redis failure: Redis
// answered.
func invalidate(ctx context.Context, c *Cache, todo []pending) ([]pending, error) {
	per := 1
	if c.topo.Kind() == topology.Standalone {
		per = invalidateBatch
	}
	var calls []script.Call
	var batches [][]pending // the ids of each call
	for start := 0; start < len(todo); {
		end := start + 1
		for end < len(todo) && end-start < per && todo[end].verPX == todo[start].verPX && todo[end].lsn == todo[start].lsn &&
			todo[end].drop == todo[start].drop {
			end++
		}
		batch := todo[start:end]
		keys := make([]string, 0, 2*len(batch))
		for _, p := range batch {
			keys = append(keys, p.key, p.key+":ver")
		}
		call := script.Call{Script: writeScript, Keys: keys, Args: []any{token.New(), batch[0].verPX, lsnArg(batch[0].lsn)}}
		if batch[0].drop {
			call = script.Call{Script: dropScript, Keys: keys}
		}
		calls = append(calls, call)
		batches = append(batches, batch)
		start = end
	}
	out, err := c.writeAll(ctx, calls)
	if err == nil || errors.Is(err, errShortfall) {
		c.answered()
	}
	if err == nil {
		return nil, nil
	}
	var failed []pending
	for i, o := range out {
		for _, p := range batches[i] {
			if o == writeShort {
				p.ctr.shortfalls.Add(1)
			}
			if o != writeApplied {
				failed = append(failed, p)
			}
		}
	}
	return failed, err
}
