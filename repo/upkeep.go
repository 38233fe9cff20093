package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// AfterCommitTimeout bounds the cache upkeep (invalidations, filter adds)
// that runs after a write. It runs on a context detached from the caller's
// cancellation: once the database has the write, giving up on the
// invalidation because the caller went away would leave a stale value
// cached for a whole TTL.
const AfterCommitTimeout = 5 * time.Second

// queue adds the cache effects of ch, as planChange decides them, to w:
// the entity's and the lookups' invalidations (or the write-through of
// the row, ch.fill), the filters' adds and distrusts, and the declared
// queries' generation bumps and patches. Values too long to be a
// mapping's cache id are never cached, so they have no mapping to drop.
// A change covered by a TRUNCATE of the table (ch.covered, repo/cdc)
// queues only the filters' part: the TRUNCATE's InvalidateAll does the
// rest.
func (c *core[T, ID]) queue(w *cacheaside.Effects, ch rowChange) {
	ch.reassert = !ch.earlierApplied && c.reassert()
	qs := c.lists.all()
	if ch.earlierApplied && testswitch.CDCListsOff.Load() {
		qs = nil // a change from the log (repo/cdc) leaves the lists alone
	}
	if testswitch.RepairOff.Load() {
		ch.earlierApplied = true // the rule of repo/cdc for every writer
	}
	s := c.shape
	if ch.covered { // the TRUNCATE's InvalidateAll drops the rest and bumps every list
		s.lists = 0
		c.queueFilters(w, planChange(ch, s))
		return
	}
	s.lists = len(qs)
	p := planChange(ch, s)
	for i, q := range qs {
		if p.allLists[i] {
			w.Add(cacheaside.Bump(q.gens.lg, allLists))
			continue
		}
		for _, where := range p.lists[i] {
			if line, seen, ok := ch.patchOf(i, where); ok {
				w.Add(cacheaside.Patch(q.gens.lg, where, seen, line))
			} else if line, ok := ch.logPatchOf(i, where); ok && q.patchable {
				w.Add(cacheaside.PatchFromLog(q.gens.lg, where, *ch.log, line))
			} else {
				w.Add(cacheaside.Bump(q.gens.lg, where))
			}
		}
	}
	c.queueFilters(w, p)
	if p.allIDs {
		w.Add(cacheaside.InvalidateAll(c.ent))
	}
	if ch.fill != nil && len(p.ids) == 1 && p.ids[0] == ch.fillID() {
		w.Add(*ch.fill)
	} else {
		w.Add(cacheaside.Invalidate(c.ent, p.ids...))
	}
	for i, l := range c.lookups {
		if i < len(p.allMaps) && p.allMaps[i] {
			w.Add(cacheaside.InvalidateAll(l.ent))
		}
		for _, k := range p.maps[i] {
			if l.cacheable(k) {
				w.Add(cacheaside.Invalidate(l.ent, k))
			}
		}
	}
}

// queueFilters adds the filters' part of p to w: what a change covered
// by a TRUNCATE of its table still needs (its keys added), the rest
// being the TRUNCATE's InvalidateAll.
func (c *core[T, ID]) queueFilters(w *cacheaside.Effects, p plan) {
	if c.filter != nil {
		w.Add(cacheaside.AddToFilter(c.filter, c.name, p.filterIDs...))
		if p.distrust {
			w.Add(cacheaside.Distrust(c.filter, c.name))
		}
	}
	for i, l := range c.lookups {
		if l.filter == nil {
			continue
		}
		if i < len(p.allMaps) && p.allMaps[i] {
			w.Add(cacheaside.Distrust(l.filter, l.name))
		}
		w.Add(cacheaside.AddToFilter(l.filter, l.name, p.adds[i]...))
	}
}

// shapeOf is the shape planChange needs of c.
func (c *core[T, ID]) shapeOf() shape {
	s := shape{filter: c.filter != nil, filters: make([]bool, len(c.lookups))}
	for i, l := range c.lookups {
		s.filters[i] = l.filter != nil
	}
	return s
}

// runAfterCommit runs w, bounded by AfterCommitTimeout and detached from
// ctx's cancellation (cache.Apply). What fails is retried in the
// background by the Cache it belongs to (a filter's work by cache); with
// report, the error (matching ErrAfterCommit) is returned too, else nil.
func runAfterCommit(ctx context.Context, cache *cacheaside.Cache, w *cacheaside.Effects, report bool) error {
	if w.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AfterCommitTimeout)
	defer cancel()
	if err := cache.Apply(ctx, w); err != nil && report {
		return fmt.Errorf("%w: %w", ErrAfterCommit, err)
	}
	return nil
}
