package cacheaside

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/topology"
)

// scanBatch is InvalidateAll's SCAN COUNT hint and the most ids it passes
// to one Invalidate.
const scanBatch = 1000

// InvalidateAll invalidates every id of the entity that has a key in
// Redis (an entry, a version or a lease), as Invalidate would, but for
// one thing: entries and versions are deleted, not replaced, so that
// loads still running have their stores refused (the version they read
// is gone) at a third of the cost per id. The next miss of an id starts
// a new version, which records no write position: a loader routing by
// RequiredLSN reads it from the source of truth itself. Use it after the
// whole source of truth changed at once, e.g. a TRUNCATE.
//
// It SCANs the entity's keys on every master of a Cluster (on the one
// server otherwise) and invalidates what it finds in batches of up to 1000
// ids, so its memory stays bounded however many ids are cached. It touches
// no other entity's keys, even one whose name shares a prefix ("users",
// "user.by.email" for "user"). It costs a walk of each node's whole
// keyspace: a tool for rare events, not for routine invalidation.
//
// Like Invalidate, it refuses the loads that began before it: a running
// load has a version key from its start, and SCAN returns every key that
// exists throughout the walk. Keys made during the walk may be skipped;
// they belong to loads that began after the source of truth changed. The
// error of a failed batch matches ErrInvalidationPending, as Invalidate's
// does; InvalidateAll then stops, and may be called again.
func (e *Entity[T]) InvalidateAll(ctx context.Context) error {
	if e.c.topo.Kind() == topology.Unsupported { // a Ring, a custom client: SCAN goes where it routes it
		return e.invalidateNode(ctx, e.c.client)
	}
	return e.c.topo.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		return e.invalidateNode(ctx, node)
	})
}

// invalidateNode is InvalidateAll on one node. The ids go through drop
// on the Cache's client, which routes them like any other.
func (e *Entity[T]) invalidateNode(ctx context.Context, node redis.Cmdable) error {
	// An id may come back up to three times (entry, :ver, :lock):
	// Invalidate drops repeats within a batch, and one in another batch
	// only costs a write. No set of every id is kept.
	ids := make([]string, 0, scanBatch)
	flush := func() error {
		err := e.drop(ctx, ids)
		ids = ids[:0]
		return err
	}
	// e.prefix holds no glob character: the namespace may not, and the
	// name is escaped. Its closing ':' keeps "users" and "user.by.email"
	// out of "user"'s match.
	iter := node.Scan(ctx, 0, e.prefix+"*", scanBatch).Iterator()
	for iter.Next(ctx) {
		id, ok := e.idOf(iter.Val())
		if !ok {
			continue
		}
		if ids = append(ids, id); len(ids) == scanBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		e.note(ctx, err)
		return fmt.Errorf("cacheaside: %s: invalidate all: scan: %w", e.name, err)
	}
	return flush()
}

// drop is Invalidate of ids, with their versions deleted instead of
// replaced (drop.lua): an id found only by its version key costs Redis a
// third of write.lua's work. What fails is queued for retry as
// Invalidate's is, and the error matches ErrInvalidationPending.
func (e *Entity[T]) drop(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	todo, err := e.pendingOf(ctx, ids)
	if err != nil {
		return err
	}
	for i := range todo {
		todo[i].drop = true
	}
	var errs [1]error
	invalidateEntities(ctx, e.c, []invalidation{{e, todo}}, errs[:])
	return errs[0]
}

// idOf returns the id of one of the entity's keys, prefix + escaped id +
// "}" and a suffix (none, ":ver", ":lock"). A key of another shape that
// matched the prefix is not ours: ok is false.
func (e *Entity[T]) idOf(key string) (id string, ok bool) {
	rest, ok := strings.CutPrefix(key, e.prefix)
	if !ok {
		return "", false
	}
	esc, _, ok := strings.Cut(rest, "}") // escaping leaves no '}' in an id
	if !ok || esc == "" {
		return "", false
	}
	id, err := url.PathUnescape(esc) // keys.Escape is percent-encoding
	if err != nil {
		return "", false
	}
	if again, err := escapeID(id); err != nil || again != esc { // e.g. "%3a", which Escape never writes
		return "", false
	}
	return id, true
}
