package repo

import (
	"context"

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
// it) that the upkeep of the write needs; nil in a transaction's view,
// whose COMMIT comes later and may end with an unknown outcome, after
// which nothing may be stored or patched.
func (r *Repository[T, ID]) seen(ctx context.Context, before *rowKeys, row *T, key string) *seenBefore {
	if r.tx != nil {
		return nil
	}
	s := &seenBefore{}
	if r.c.writeThrough && key != "" && row != nil {
		v, err := r.c.ent.Version(ctx, key)
		if err != nil {
			return nil // Redis is failing: the upkeep invalidates and bumps
		}
		s.version, s.fill = v, true
	}
	if s.lists = r.seenLists(ctx, before, row); s.lists == nil && !s.fill {
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
