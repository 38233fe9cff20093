package repo

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/rowchange"
)

// scanCount is the COUNT hint of InvalidateAll's SCAN, and the most ids
// it invalidates in one pipeline.
const scanCount = 1000

// InvalidateAll invalidates every cached row of the repository and every
// cached GetBy mapping, as after a TRUNCATE: it SCANs the entities' keys
// (on every master of a Cluster) and invalidates the ids it finds, in
// pipelines of up to 1000, so that loads still running are refused too.
// Only the repository's own keys are touched, never the rest of the
// namespace or database. The Bloom filters keep their keys (a false
// "maybe" costs one query). It costs a walk of the whole keyspace of each
// node: a tool for rare events, not for routine invalidation.
func (r *Repository[T, ID]) InvalidateAll(ctx context.Context) error {
	c := r.c
	targets := []rowchange.Invalidator{c.ent}
	for _, l := range c.lookups {
		targets = append(targets, l.ent)
	}
	for _, e := range targets {
		if err := invalidateScan(ctx, c.client, e); err != nil {
			return fmt.Errorf("repo: %s: invalidate all: %w", e.Name(), err)
		}
	}
	return nil
}

// keyer is a cacheaside.Entity of any type.
type keyer interface {
	Key(id string) (string, error)
}

// invalidateScan invalidates every id of e that has a key in Redis.
func invalidateScan(ctx context.Context, client redis.UniversalClient, e rowchange.Invalidator) error {
	k, err := e.(keyer).Key("0")
	if err != nil {
		return err
	}
	// A key is prefix + escaped id + "}" (+ ":ver" or ":lock"); escaping
	// leaves no glob character in prefix.
	prefix := strings.TrimSuffix(k, "0}")
	scan := func(ctx context.Context, node redis.Cmdable) error {
		// An id may come back up to three times (entry, version, lease);
		// Invalidate drops duplicates within a batch, and a repeat in
		// another batch only costs a write. No set of every id is kept:
		// memory stays bounded however large the entity.
		ids := make([]string, 0, scanCount)
		flush := func() error {
			err := e.Invalidate(ctx, ids...)
			ids = ids[:0]
			return err
		}
		iter := node.Scan(ctx, 0, prefix+"*", scanCount).Iterator()
		for iter.Next(ctx) {
			rest := strings.TrimPrefix(iter.Val(), prefix)
			end := strings.IndexByte(rest, '}')
			if end <= 0 {
				continue
			}
			id, err := url.PathUnescape(rest[:end])
			if err != nil {
				continue // not a key of the entity's shape
			}
			if ids = append(ids, id); len(ids) == scanCount {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return err
		}
		return flush()
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	}
	return scan(ctx, client)
}
