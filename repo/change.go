package repo

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/rowchange"
)

// feed is a repository as package repo/cdc sees it (its table interface):
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

// FedByLog records that an Invalidator of this process has the table
// registered: the repository's writes re-assert their rows' places in
// the lists they stay in (see query_check.go).
func (f *feed[T, ID]) FedByLog() { f.c.fedByLog.Store(true) }

// KeyColumns returns the columns of the table that the cache keys use:
// the primary key, each unique key's, and each declared query's filter,
// order and soft-delete columns (those readBefore reads).
func (f *feed[T, ID]) KeyColumns() []string { return f.c.keyCols() }

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
// decides it for every writer. Values are decoded by their PostgreSQL
// type into the model's fields (keysOfLog). A value that cannot be
// decoded, and a primary key the change lacks where the log always
// carries it, do not stop the change: their keys are lost, planChange
// queues the safe superset of the work, and their columns are returned
// in undecoded. An unknown Kind, or a change without the row its Kind
// needs, is an error matching ErrInvalidID, and nothing is queued.
func (f *feed[T, ID]) Queue(w *cacheaside.Effects, ch rowchange.Change) (undecoded []rowchange.Undecoded, err error) {
	c := f.c
	ctx := context.Background()
	rc := rowChange{earlierApplied: true, covered: ch.Covered} // the log comes in commit order
	if ch.CommitLSN != 0 {
		rc.log = &cacheaside.LogPos{LSN: ch.CommitLSN, Xid: ch.Xid}
	}
	// side returns the keys of row, whose primary key the log carries.
	side := func(row rowchange.Row) *rowKeys {
		k, lost := c.keysOfLog(ctx, row)
		undecoded = append(undecoded, lost...)
		if k.id == "" && !k.idLost {
			k.idLost = true
			undecoded = append(undecoded, rowchange.Undecoded{Column: c.pk.DBName,
				Err: fmt.Errorf("%s: the change lacks the primary key", c.name)})
		}
		return k
	}
	switch ch.Kind {
	case rowchange.Insert, rowchange.Update:
		if ch.New == nil {
			return nil, fmt.Errorf("%w: %s: change without its new row", ErrInvalidID, c.name)
		}
		rc.after = side(ch.New)
		if c.logStores && rc.log != nil && !rc.covered && rc.after.id != "" && !rc.after.idLost {
			switch row, ok, deleted := c.rowOfLog(ctx, ch.New); {
			case ok:
				fill := cacheaside.StoreFromLog(c.ent, rc.after.id, ch.CommitLSN, row)
				rc.fill = &fill
			case deleted: // soft-deleted: a load finds no row
				fill := cacheaside.AbsentFromLog(c.ent, rc.after.id, ch.CommitLSN)
				rc.fill = &fill
			}
		}
	case rowchange.Delete:
		if ch.Old == nil {
			return nil, fmt.Errorf("%w: %s: delete without its old row", ErrInvalidID, c.name)
		}
	default:
		return nil, fmt.Errorf("%w: %s: unknown change kind %d", ErrInvalidID, c.name, ch.Kind)
	}
	switch {
	case ch.Kind == rowchange.Insert:
		// No row before.
	case ch.Old != nil:
		rc.before = side(ch.Old)
	default:
		// An update without an old row in the log: the key did not
		// change, the old unique and list values are unknown.
		rc.before = &rowKeys{id: rc.after.id, idLost: rc.after.idLost}
	}
	if ch.Kind == rowchange.Delete && c.logStores && rc.log != nil && !rc.covered && rc.before.id != "" && !rc.before.idLost {
		fill := cacheaside.AbsentFromLog(c.ent, rc.before.id, ch.CommitLSN)
		rc.fill = &fill // the row's absence, under the rule a row from the log is stored by
	}
	c.queue(w, rc)
	return undecoded, nil
}
