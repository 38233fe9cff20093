package cacheaside

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Effects is a batch of Effects that follows committed writes, merged by
// target: the ids of the Invalidates of one entity, of the Bumps of one
// ListGenerations and the keys of the AddToFilters of one filter are one
// effect each, so that a transaction of a thousand writes costs one
// pipelined call per target, not two thousand round trips. A Distrust is
// kept once per filter; Patches and StoreIfVersions, which compare what
// their own write read, are kept one by one. The zero Effects is empty and
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
	e.ids = slices.Clone(e.ids)
	w.n += len(e.ids)
	if e.kind == effectPatch || e.kind == effectStoreIfVersion {
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

// Merge appends o's effects to w's.
func (w *Effects) Merge(o *Effects) {
	w.SetLSN(o.lsn)
	w.Add(o.list...)
}

// Run does the effects. Targets are independent (different filters,
// entities and lists), so they run concurrently and the caller waits for
// about one round trip. Every effect is tried even when another fails; the
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
	var wg sync.WaitGroup
	for i := range w.list[1:] {
		wg.Go(func() { errs[i+1] = w.list[i+1].do(ctx) })
	}
	errs[0] = w.list[0].do(ctx)
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
