package repo

import (
	"context"
	"slices"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// This file holds the write-through of rows (Options.WriteThrough): a
// write through the repository that read the row back as stored
// (RETURNING) stores it in the entity cache after its COMMIT, instead of
// invalidating it (the effect cacheaside.StoreIfVersion, compared with the
// version read before the write), so that the next read of the row (a Get, a list's
// GetMany) costs no SELECT.

// seenBefore is what a write read of the cache before its statement, so
// that its upkeep can patch lists (seenLists) and store its row (version)
// rather than invalidate them.
type seenBefore struct {
	lists   []map[string]string
	version string
	fill    bool // version was read: the row may be stored
}

// seen reads, before a write's statement, the list generations and the
// version of the row with cache id key ("" when the database generates
// it) that the upkeep of the write needs, in one round trip
// (cacheaside's ReadBefore); nil in a transaction's view, whose COMMIT
// comes later and may end with an unknown outcome, after which nothing
// may be stored or patched.
func (r *Repository[T, ID]) seen(ctx context.Context, before *rowKeys, row *T, key string) *seenBefore {
	if r.tx != nil {
		return nil
	}
	version := r.c.writeThrough && key != "" && row != nil
	patches := slices.ContainsFunc(r.c.lists.all(), func(q *listQuery) bool { return q.patchable })
	if !version && !patches {
		return nil
	}
	reads, at := r.listReads(ctx, before, row)
	got := r.c.ent.ReadBefore(ctx, key, version, reads)
	if got.VersionErr != nil {
		return nil // Redis is failing: the upkeep invalidates and bumps
	}
	s := &seenBefore{version: got.Version, fill: version}
	if patches {
		s.lists = make([]map[string]string, r.c.lists.len())
		for j, i := range at {
			s.lists[i] = got.Lists[j]
		}
	}
	if s.lists == nil && !s.fill {
		return nil
	}
	return s
}

// returning is db reading the written row back (RETURNING *) when the
// repository writes through, so that the row it stores is the row as
// stored (defaults, triggers, the database's precision).
func (r *Repository[T, ID]) returning(db *gorm.DB) *gorm.DB {
	if !r.c.writeThrough {
		return db
	}
	return db.Clauses(clause.Returning{})
}
