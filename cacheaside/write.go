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
			e.c.br.Success() // Redis answered; the write is not confirmed
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
	todo := make([]pending, 0, len(ids))
	lsn := writeLSN(ctx)
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		key, err := e.key(id)
		if err != nil {
			return err
		}
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		todo = append(todo, pending{key: key, verPX: e.verPX, ctr: e.ctr, lsn: lsn})
	}
	defer e.local.wrotePending(ctx, todo) // near cache: drop ours (and announce) once Redis has the write
	if !e.c.br.Allow() {
		e.ctr.inc(EventBypass)
		e.c.retry.add(todo)
		return fmt.Errorf("%w: %s: breaker open", ErrInvalidationPending, e.name)
	}
	failed, err := invalidate(ctx, e.c, todo)
	if err == nil {
		return nil
	}
	if !errors.Is(err, errShortfall) {
		e.note(ctx, err)
	}
	e.c.retry.add(failed)
	return fmt.Errorf("%w: %s (%d of %d ids): %w", ErrInvalidationPending, e.name, len(failed), len(todo), err)
}

// invalidateBatch is the most ids one write.lua call carries on a single
// Redis node: a few hundred microseconds of server time, so that a big
// batch (a bulk write, a CDC transaction) never blocks Redis for long.
const invalidateBatch = 64

// invalidate runs write.lua in delete mode for every pending entry in one
// pipeline (with Options.ReplicaAcks, one per master, each followed by
// WAIT) and returns the entries that failed or that too few replicas
// confirmed (counted). On a single node (a *redis.Client, standalone or
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
		for end < len(todo) && end-start < per && todo[end].verPX == todo[start].verPX && todo[end].lsn == todo[start].lsn {
			end++
		}
		batch := todo[start:end]
		keys := make([]string, 0, 2*len(batch))
		for _, p := range batch {
			keys = append(keys, p.key, p.key+":ver")
		}
		calls = append(calls, script.Call{Script: writeScript, Keys: keys, Args: []any{token.New(), batch[0].verPX, lsnArg(batch[0].lsn)}})
		batches = append(batches, batch)
		start = end
	}
	out, err := c.writeAll(ctx, calls)
	if err == nil || errors.Is(err, errShortfall) {
		c.br.Success()
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
