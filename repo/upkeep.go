package repo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// AfterCommitTimeout bounds the cache upkeep (invalidations, filter adds)
// that runs after a write. It runs on a context detached from the caller's
// cancellation: once the database has the write, giving up on the
// invalidation because the caller went away would leave a stale value
// cached for a whole TTL.
const AfterCommitTimeout = 5 * time.Second

// invalidator is a cacheaside.Entity of any type.
type invalidator interface {
	Invalidate(ctx context.Context, ids ...string) error
	Name() string
}

// adder is a *bloom.Filter.
type adder interface {
	AddMany(ctx context.Context, keys []string) error
}

// upkeep is the cache work that follows committed writes: keys to add to
// filters and ids to invalidate, merged by target, so that a transaction
// of a thousand Creates costs one pipelined AddMany and one pipelined
// Invalidate per target, not two thousand round trips.
type upkeep struct {
	targets []any // *addTarget or *invTarget, in first-use order
	adds    map[adder]*addTarget
	invs    map[invalidator]*invTarget
}

type addTarget struct {
	f    adder
	name string
	keys []string
}

type invTarget struct {
	e   invalidator
	ids []string
}

func (u *upkeep) add(f adder, name string, keys ...string) {
	if u.adds == nil {
		u.adds = map[adder]*addTarget{}
	}
	t := u.adds[f]
	if t == nil {
		t = &addTarget{f: f, name: name}
		u.adds[f] = t
		u.targets = append(u.targets, t)
	}
	t.keys = append(t.keys, keys...)
}

func (u *upkeep) invalidate(e invalidator, ids ...string) {
	if u.invs == nil {
		u.invs = map[invalidator]*invTarget{}
	}
	t := u.invs[e]
	if t == nil {
		t = &invTarget{e: e}
		u.invs[e] = t
		u.targets = append(u.targets, t)
	}
	t.ids = append(t.ids, ids...)
}

// merge appends o's work to u's.
func (u *upkeep) merge(o *upkeep) {
	for _, t := range o.targets {
		switch t := t.(type) {
		case *addTarget:
			u.add(t.f, t.name, t.keys...)
		case *invTarget:
			u.invalidate(t.e, t.ids...)
		}
	}
}

// run does the work, bounded by AfterCommitTimeout. Targets are
// independent (different filters and entities), so they run concurrently
// and a write waits for about one round trip. Every target is tried even
// when another fails; the error matches ErrAfterCommit.
func (u *upkeep) run(ctx context.Context) error {
	if len(u.targets) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AfterCommitTimeout)
	defer cancel()
	errs := make([]error, len(u.targets))
	var wg sync.WaitGroup
	for i, t := range u.targets[1:] {
		wg.Go(func() { errs[i+1] = runTarget(ctx, t) })
	}
	errs[0] = runTarget(ctx, u.targets[0])
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrAfterCommit, err)
	}
	return nil
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
	}
	return nil
}
