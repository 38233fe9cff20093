package repo

import (
	"context"
	"fmt"
	"time"

	"github.com/asidekit/asidekit/internal/rowchange"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// AfterCommitTimeout bounds the cache upkeep (invalidations, filter adds)
// that runs after a write. It runs on a context detached from the caller's
// cancellation: once the database has the write, giving up on the
// invalidation because the caller went away would leave a stale value
// cached for a whole TTL.
const AfterCommitTimeout = 5 * time.Second

// queue adds the cache work of ch, as planChange decides it, to w: the
// entity's and the lookups' invalidations, the filters' adds and the
// declared queries' generation bumps. Values
// too long to be a mapping's cache id are never cached, so they have no
// mapping to drop.
func (c *core[T, ID]) queue(w *rowchange.Work, ch rowChange) {
	qs := c.lists.all()
	if ch.earlierApplied && testswitch.CDCListsOff.Load() {
		qs = nil // a change from the log (repo/cdc) leaves the lists alone
	}
	if testswitch.RepairOff.Load() {
		ch.earlierApplied = true // the rule of repo/cdc for every writer
	}
	s := c.shape
	s.lists = len(qs)
	p := planChange(ch, s)
	for i, q := range qs {
		if p.allLists[i] {
			w.Invalidate(q.gens, allLists)
			continue
		}
		for _, where := range p.lists[i] {
			if line, seen, ok := ch.patchOf(i, where); ok {
				w.Invalidate(&patcher{g: q.gens, seen: seen, line: line}, where)
			} else {
				w.Invalidate(q.gens, where)
			}
		}
	}
	if c.filter != nil {
		w.Add(c.filter, c.name, p.filterIDs...)
		if p.distrust {
			w.Distrust(c.filter, c.name)
		}
	}
	if p.allIDs {
		w.Invalidate(everyKey{c.ent}, "*")
	}
	if ch.fill != nil && ch.after != nil && len(p.ids) == 1 && p.ids[0] == ch.after.id {
		w.Invalidate(ch.fill, p.ids[0])
	} else {
		w.Invalidate(c.ent, p.ids...)
	}
	for i, l := range c.lookups {
		if i < len(p.allMaps) && p.allMaps[i] {
			w.Invalidate(everyKey{l.ent}, "*")
			if l.filter != nil {
				w.Distrust(l.filter, l.name)
			}
		}
		if l.filter != nil {
			w.Add(l.filter, l.name, p.adds[i]...)
		}
		for _, k := range p.maps[i] {
			if l.cacheable(k) {
				w.Invalidate(l.ent, k)
			}
		}
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
// ctx's cancellation. What fails is retried in the background; with
// report, the error (matching ErrAfterCommit) is returned too, else nil.
func runAfterCommit(ctx context.Context, w *rowchange.Work, report bool) error {
	if w.Len() == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AfterCommitTimeout)
	defer cancel()
	failed, err := w.Try(ctx)
	if failed == nil {
		return nil
	}
	err = fmt.Errorf("%w: %w", ErrAfterCommit, err)
	retrier.queue(failed, err)
	if report {
		return err
	}
	return nil
}

// everyKey is an entity as a rowchange.Invalidator that invalidates every
// key of the entity (InvalidateAll: a SCAN of its keys) whatever the ids
// it is given: the safe path of a change whose key was lost (planChange).
type everyKey struct {
	e interface {
		InvalidateAll(ctx context.Context) error
		Name() string
	}
}

func (k everyKey) Name() string { return k.e.Name() + " (every key)" }
func (k everyKey) Invalidate(ctx context.Context, _ ...string) error {
	return k.e.InvalidateAll(ctx)
}
