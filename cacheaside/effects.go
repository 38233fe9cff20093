package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/script"
)

// Effects is a batch of Effects that follows committed writes, merged by
// target: the ids of the Invalidates of one entity, of the Bumps of one
// ListGenerations and the keys of the AddToFilters of one filter are one
// effect each, so that a transaction of a thousand writes costs one
// pipelined call per target, not two thousand round trips, and Run sends
// the targets' script calls on one Redis client in one pipeline (one round
// trip per node; the Invalidates of one Cache's entities in shared
// write.lua calls). The PatchFromLogs of one list are one effect, their
// lines in order (they come in commit order). A Distrust is kept once per
// filter; Patches and StoreIfVersions, which compare what their own write
// read, are kept one by one (but see JoinPatches). The zero Effects is empty and
// ready; it is not safe for concurrent use.
type Effects struct {
	list  []Effect          // in first-use order
	index map[effectKey]int // position in list of a mergeable effect's target
	n     int               // ids and keys queued (a Distrust counts one)
	lsn   uint64            // write position behind the effects (SetLSN); 0: unknown
}

// effectKey is the target of a mergeable effect.
type effectKey struct {
	kind   effectKind
	ent    effectEntity
	lists  *ListGenerations
	filter FilterWriter
	list   string // a PatchFromLog's list id
}

// SetLSN records that the effects follow writes up to position lsn (a
// PostgreSQL WAL position): their invalidations record the highest
// position set (WithWriteLSN), so that a load from a replica that has not
// replayed it is not cached.
func (w *Effects) SetLSN(lsn uint64) { w.lsn = max(w.lsn, lsn) }

// LSN returns the highest position SetLSN recorded, or 0.
func (w *Effects) LSN() uint64 { return w.lsn }

// Len returns the number of ids and keys queued; a Distrust counts one.
func (w *Effects) Len() int { return w.n }

// Reset empties w.
func (w *Effects) Reset() { *w = Effects{} }

// Add queues effects, in order. An effect without ids (but a Distrust)
// does nothing and is not queued.
func (w *Effects) Add(effects ...Effect) {
	for _, e := range effects {
		w.add(e)
	}
}

func (w *Effects) add(e Effect) {
	switch e.kind {
	case 0:
		return
	case effectDistrust:
		k := effectKey{kind: e.kind, filter: e.filter}
		if _, ok := w.index[k]; ok {
			return
		}
		w.keep(k, e)
		w.n++
		return
	}
	if len(e.ids) == 0 {
		return
	}
	if e.kind == effectPatchLog { // one script call per list, its lines in order
		k := effectKey{kind: e.kind, lists: e.lists, list: e.ids[0]}
		w.n += len(e.lines)
		if i, ok := w.index[k]; ok {
			w.list[i].lines = append(w.list[i].lines, e.lines...)
			return
		}
		e.lines = slices.Clone(e.lines)
		w.keep(k, e)
		return
	}
	e.ids = slices.Clone(e.ids)
	w.n += len(e.ids)
	if e.kind == effectPatch || e.kind == effectStoreIfVersion || e.kind == effectStoreFromLog {
		w.list = append(w.list, e)
		return
	}
	k := effectKey{kind: e.kind, ent: e.ent, lists: e.lists, filter: e.filter}
	if i, ok := w.index[k]; ok {
		w.list[i].ids = append(w.list[i].ids, e.ids...)
		return
	}
	w.keep(k, e)
}

// keep appends e, the first effect of target k.
func (w *Effects) keep(k effectKey, e Effect) {
	if w.index == nil {
		w.index = map[effectKey]int{}
	}
	w.index[k] = len(w.list)
	w.list = append(w.list, e)
}

// JoinPatches makes the Patches of w that compare one list with the same
// value one Patch, their lines in the order added: the writes of one
// transaction, which Effects holds in the order they ran (two writes that
// read one generation value would otherwise patch once and bump once).
// Patches of different writes must not be joined: their order is not
// known to be commit order.
func (w *Effects) JoinPatches() {
	type target struct {
		lists    *ListGenerations
		id, seen string
	}
	at := map[target]int{}
	list, lsn := w.list, w.lsn
	*w = Effects{lsn: lsn}
	for _, e := range list {
		if e.kind == effectPatch {
			k := target{e.lists, e.ids[0], e.seen}
			if i, ok := at[k]; ok {
				w.list[i].lines = append(w.list[i].lines, e.lines...)
				w.n += len(e.ids)
				continue
			}
			at[k] = len(w.list)
			e.lines = slices.Clone(e.lines)
		}
		w.add(e)
	}
}

// BumpPatches replaces each Patch of w by a Bump of its list: the work
// of writes whose COMMIT may not have happened, where a line would place
// a row as a change that may not exist left it.
func (w *Effects) BumpPatches() {
	list, lsn := w.list, w.lsn
	*w = Effects{lsn: lsn}
	for _, e := range list {
		if e.kind == effectPatch {
			e = Bump(e.lists, e.ids...)
		}
		w.add(e)
	}
}

// Merge appends o's effects to w's.
func (w *Effects) Merge(o *Effects) {
	w.SetLSN(o.lsn)
	w.Add(o.list...)
}

// Run does the effects. Targets are independent (different filters,
// entities and lists), so they run concurrently, and their script calls
// on one Redis client go out in one pipeline: the caller waits for about
// one round trip per node. Every effect is tried even when another fails; the
// errors are joined. Running it again does the same work again: every
// effect is idempotent, or turns into an invalidation when done twice.
// What fails is not retried but for the invalidations of keys, which
// their entity queues itself (ErrInvalidationPending); Cache.Apply
// retries the rest too.
func (w *Effects) Run(ctx context.Context) error {
	_, _, err := w.try(ctx)
	return err
}

// try is Run that also returns the effects that failed and need another
// try (nil when none do), and the number of ids whose invalidation their
// entity queued in its Cache's retrier itself (held). Neither is an
// effect whose Redis client was closed: it can never succeed, and nothing
// reads through that client any more.
func (w *Effects) try(ctx context.Context) (failed *Effects, held int, err error) {
	if len(w.list) == 0 {
		return nil, 0, nil
	}
	ctx = WithWriteLSN(ctx, w.lsn)
	errs := make([]error, len(w.list))
	runs := w.runs()
	// The runs' script calls on one client share a pipeline: one round
	// trip per node after the commit (script.Batch). Not for big batches
	// (a bulk write, a CDC transaction): there the time is the client's
	// and Redis's work, not round trips, and the targets' own pipelines,
	// sent concurrently, overlap them.
	var batch *script.Batch
	if w.n <= batchedEffectsMax {
		batch, ctx = script.NewBatch(ctx, len(runs))
	}
	var wg sync.WaitGroup
	for _, run := range runs[1:] {
		wg.Go(func() {
			defer batch.Done()
			run(ctx, errs)
		})
	}
	func() {
		defer batch.Done()
		runs[0](ctx, errs)
	}()
	wg.Wait()
	for i, err := range errs {
		e := &w.list[i]
		switch {
		case err == nil || errors.Is(err, redis.ErrClosed):
			continue
		case e.queuesItself() && errors.Is(err, ErrInvalidationPending):
			held += len(e.ids)
			continue
		}
		if failed == nil {
			failed = &Effects{lsn: w.lsn}
		}
		failed.add(*e)
	}
	return failed, held, errors.Join(errs...)
}

// batchedEffectsMax is the most ids and keys (Effects.Len) whose effects
// share one pipeline: a commit of a few rows. An asidebench outofband run
// applying 50,000 rows in one pipeline per batch took 2.5 s instead of
// 1.7 s.
const batchedEffectsMax = 256

// runs returns the independent pieces of w's work, each setting the
// errors of its effects in errs: one per effect, but that the Invalidates
// of the entities of one Cache are one piece, one pipeline (a row and its
// unique keys' mappings: one round trip, not one per entity).
func (w *Effects) runs() []func(context.Context, []error) {
	var runs []func(context.Context, []error)
	groups := map[*Cache][]int{} // indexes in w.list of a Cache's Invalidates
	var order []*Cache
	for i := range w.list {
		e := &w.list[i]
		if inv, ok := e.ent.(invalidator); ok && e.kind == effectInvalidate && inv.cache() != nil {
			c := inv.cache()
			if _, seen := groups[c]; !seen {
				order = append(order, c)
			}
			groups[c] = append(groups[c], i)
			continue
		}
		runs = append(runs, func(ctx context.Context, errs []error) { errs[i] = e.do(ctx) })
	}
	for _, c := range order {
		idx := groups[c]
		runs = append(runs, func(ctx context.Context, errs []error) { w.invalidate(ctx, c, idx, errs) })
	}
	return runs
}

// invalidate does the Invalidate effects of w.list at idx, whose entities
// share Cache c, in one pipeline; each effect's error is the one its do
// would have returned.
func (w *Effects) invalidate(ctx context.Context, c *Cache, idx []int, errs []error) {
	invs := make([]invalidation, 0, len(idx))
	at := make([]int, 0, len(idx)) // w.list index of invs[k]
	for _, i := range idx {
		e := &w.list[i]
		inv := e.ent.(invalidator)
		todo, err := inv.pendingOf(ctx, e.ids)
		if err != nil {
			errs[i] = fmt.Errorf("repo: invalidate %d ids of %s: %w", len(e.ids), e.ent.Name(), err)
			continue
		}
		invs = append(invs, invalidation{inv, todo})
		at = append(at, i)
	}
	if len(invs) == 0 {
		return
	}
	out := make([]error, len(invs))
	invalidateEntities(ctx, c, invs, out)
	for k, err := range out {
		if err != nil {
			e := &w.list[at[k]]
			errs[at[k]] = fmt.Errorf("repo: invalidate %d ids of %s: %w", len(e.ids), e.ent.Name(), err)
		}
	}
}
