package repo

import (
	"context"
	"fmt"
)

// InvalidateAll invalidates every cached row of the repository and every
// cached GetBy mapping, as after a TRUNCATE, with
// cacheaside.Entity.InvalidateAll on the rows' entity and each lookup's:
// loads still running are refused too. Only the repository's own keys are
// touched, never the rest of the namespace or database. The Bloom filters
// keep their keys (a false "maybe" costs one query). It costs a walk of
// the whole keyspace of each node per entity: a tool for rare events, not
// for routine invalidation.
func (r *Repository[T, ID]) InvalidateAll(ctx context.Context) error {
	c := r.c
	if err := c.ent.InvalidateAll(ctx); err != nil {
		return fmt.Errorf("repo: %s: invalidate all: %w", c.name, err)
	}
	for _, l := range c.lookups {
		if err := l.ent.InvalidateAll(ctx); err != nil {
			return fmt.Errorf("repo: %s: invalidate all: %w", l.name, err)
		}
	}
	return nil
}
