package repo

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/rowchange"
)

// feed is a repository as package repo/cdc sees it (rowchange.Table):
// registered by New, so that the change-data-capture bridge stays out of
// the repository's API. It must not refer to the *Repository it serves.
type feed[T any, ID comparable] struct {
	c    *core[T, ID]
	base *Repository[T, ID] // a view of its own, for InvalidateAll
}

func (f *feed[T, ID]) Table() string { return f.c.sch.Table }
func (f *feed[T, ID]) InvalidateAll(ctx context.Context) error {
	if err := f.base.InvalidateAll(ctx); err != nil {
		return err
	}
	return f.c.lists.invalidateAll(ctx) // every list of every declared query
}
func (f *feed[T, ID]) Ping(ctx context.Context) error { return f.c.cache.Client().Ping(ctx).Err() }
func (f *feed[T, ID]) Cache() *cacheaside.Cache       { return f.c.cache }

// RebuildFilter rebuilds the Bloom filters (a lost slot lost inserts:
// the filters may lack their keys, however complete they were); without
// filters it does nothing.
func (f *feed[T, ID]) RebuildFilter(ctx context.Context) error {
	if f.c.filter == nil {
		return nil
	}
	return f.base.RebuildFilter(ctx)
}

// Queue adds the cache work of a committed change to w, as planChange
// decides it for every writer. A change whose primary key is missing or
// cannot be set on the model is an error matching ErrInvalidID, and
// nothing is queued.
func (f *feed[T, ID]) Queue(w *rowchange.Work, ch rowchange.Change) error {
	c := f.c
	ctx := context.Background()
	rc := rowChange{earlierApplied: true} // the log comes in commit order
	var err error
	switch ch.Kind {
	case rowchange.Insert, rowchange.Update:
		if rc.after, err = c.keysOf(ctx, ch.New); err != nil {
			return err
		}
		if rc.after.id == "" {
			return fmt.Errorf("%w: %s: change without the primary key %s", ErrInvalidID, c.name, c.pk.DBName)
		}
	case rowchange.Delete:
	default:
		return fmt.Errorf("%w: %s: unknown change kind %d", ErrInvalidID, c.name, ch.Kind)
	}
	switch {
	case ch.Kind == rowchange.Insert:
		// No row before.
	case ch.Old != nil:
		if rc.before, err = c.keysOf(ctx, ch.Old); err != nil {
			return err
		}
	case ch.Kind == rowchange.Update:
		// No old row in the log: the key did not change, the old unique
		// values are unknown.
		rc.before = &rowKeys{id: rc.after.id}
	}
	if ch.Kind == rowchange.Delete && (rc.before == nil || rc.before.id == "") {
		return fmt.Errorf("%w: %s: delete without the primary key %s", ErrInvalidID, c.name, c.pk.DBName)
	}
	c.queue(w, rc)
	return nil
}
