package rowchange

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
)

// Invalidator is a cacheaside.Entity of any type.
type Invalidator interface {
	Invalidate(ctx context.Context, ids ...string) error
	Name() string
}

// Adder is a Bloom filter (*bloom.Filter).
type Adder interface {
	AddMany(ctx context.Context, keys []string) error
}

// Distruster is a Bloom filter (*bloom.Filter) that can be told to stop
// trusting its "absent" answers until its next rebuild.
type Distruster interface {
	Distrust(ctx context.Context) error
}

// Work is cache work that follows committed writes: keys to add to
// filters, ids to invalidate and filters to distrust, merged by target, so that a transaction
// of a thousand writes costs one pipelined AddMany and one pipelined
// Invalidate per target, not two thousand round trips. The zero Work is
// empty and ready; it is not safe for concurrent use.
type Work struct {
	targets []any // *addTarget, *invTarget or *distrustTarget, in first-use order
	adds    map[Adder]*addTarget
	invs    map[Invalidator]*invTarget
	dists   map[Distruster]bool
	n       int    // ids and keys queued
	lsn     uint64 // write position behind the work (SetLSN); 0: unknown
}

// SetLSN records that the work follows writes up to position lsn (a
// PostgreSQL WAL position): its invalidations record the highest position
// set (cacheaside.WithWriteLSN), so that a load from a replica that has
// not replayed it is not cached.
func (w *Work) SetLSN(lsn uint64) { w.lsn = max(w.lsn, lsn) }

// LSN returns the highest position SetLSN recorded, or 0.
func (w *Work) LSN() uint64 { return w.lsn }

type addTarget struct {
	f    Adder
	name string
	keys []string
}

type invTarget struct {
	e   Invalidator
	ids []string
}

type distrustTarget struct {
	f    Distruster
	name string
}

// Len returns the number of ids and keys queued.
func (w *Work) Len() int { return w.n }

// Reset empties w.
func (w *Work) Reset() { *w = Work{} }

// Add queues keys to add to filter f (named name in errors).
func (w *Work) Add(f Adder, name string, keys ...string) {
	if len(keys) == 0 {
		return
	}
	if w.adds == nil {
		w.adds = map[Adder]*addTarget{}
	}
	t := w.adds[f]
	if t == nil {
		t = &addTarget{f: f, name: name}
		w.adds[f] = t
		w.targets = append(w.targets, t)
	}
	t.keys = append(t.keys, keys...)
	w.n += len(keys)
}

// Invalidate queues ids to invalidate in e.
func (w *Work) Invalidate(e Invalidator, ids ...string) {
	if len(ids) == 0 {
		return
	}
	if w.invs == nil {
		w.invs = map[Invalidator]*invTarget{}
	}
	t := w.invs[e]
	if t == nil {
		t = &invTarget{e: e}
		w.invs[e] = t
		w.targets = append(w.targets, t)
	}
	t.ids = append(t.ids, ids...)
	w.n += len(ids)
}

// Distrust queues the distrust of filter f (named name in errors), once
// however often it is queued; it counts as one key in Len.
func (w *Work) Distrust(f Distruster, name string) {
	if w.dists[f] {
		return
	}
	if w.dists == nil {
		w.dists = map[Distruster]bool{}
	}
	w.dists[f] = true
	w.targets = append(w.targets, &distrustTarget{f: f, name: name})
	w.n++
}

// Merge appends o's work to w's.
func (w *Work) Merge(o *Work) {
	w.SetLSN(o.lsn)
	for _, t := range o.targets {
		switch t := t.(type) {
		case *addTarget:
			w.Add(t.f, t.name, t.keys...)
		case *invTarget:
			w.Invalidate(t.e, t.ids...)
		case *distrustTarget:
			w.Distrust(t.f, t.name)
		}
	}
}

// Run does the work. Targets are independent (different filters and
// entities), so they run concurrently and the caller waits for about one
// round trip. Every target is tried even when another fails; the errors
// are joined. Running it again does the same work again: invalidations and
// filter adds are idempotent.
func (w *Work) Run(ctx context.Context) error {
	_, err := w.Try(ctx)
	return err
}

// Try is Run that also returns the work of the targets that failed (nil
// when none did), to be tried again. A target whose Redis client was
// closed is not returned: it can never succeed, and nothing reads through
// that client any more.
func (w *Work) Try(ctx context.Context) (failed *Work, err error) {
	if len(w.targets) == 0 {
		return nil, nil
	}
	ctx = cacheaside.WithWriteLSN(ctx, w.lsn)
	errs := make([]error, len(w.targets))
	var wg sync.WaitGroup
	for i, t := range w.targets[1:] {
		wg.Go(func() { errs[i+1] = runTarget(ctx, t) })
	}
	errs[0] = runTarget(ctx, w.targets[0])
	wg.Wait()
	for i, err := range errs {
		if err == nil || errors.Is(err, redis.ErrClosed) {
			continue
		}
		if failed == nil {
			failed = &Work{lsn: w.lsn}
		}
		switch t := w.targets[i].(type) {
		case *addTarget:
			failed.Add(t.f, t.name, t.keys...)
		case *invTarget:
			failed.Invalidate(t.e, t.ids...)
		case *distrustTarget:
			failed.Distrust(t.f, t.name)
		}
	}
	return failed, errors.Join(errs...)
}

func runTarget(ctx context.Context, t any) error {
	switch t := t.(type) {
	case *addTarget:
		if err := t.f.AddMany(ctx, t.keys); err != nil {
			return fmt.Errorf("repo: add %d keys to filter %s: %w", len(t.keys), t.name, err)
		}
	case *invTarget:
		if err := t.e.Invalidate(ctx, t.ids...); err != nil {
			return fmt.Errorf("repo: invalidate %d ids of %s: %w", len(t.ids), t.e.Name(), err)
		}
	case *distrustTarget:
		if err := t.f.Distrust(ctx); err != nil {
			return fmt.Errorf("repo: distrust filter %s: %w", t.name, err)
		}
	}
	return nil
}
