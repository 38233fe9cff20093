package repo

import (
	"context"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
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
// (cacheaside's ReadBefore). In a transaction's view only the lists'
// generations: its COMMIT comes later and may end with an unknown
// outcome, after which the row may not be stored (Transaction bumps the
// lists instead of patching them then).
func (r *Repository[T, ID]) seen(ctx context.Context, before *rowKeys, row *T, key string) *seenBefore {
	version := r.tx == nil && r.c.writeThrough && key != "" && row != nil
	if !version && !r.c.lists.patchable() {
		return nil
	}
	reads, at := r.listReads(ctx, before, row)
	return r.readSeen(ctx, key, version, reads, at)
}

// seenStaying is seen for a write that learns the row's new values only
// from its statement (Modify, UpdateColumns): when the write re-asserts
// its row's place (core.reassert), the generations of the lists the row
// is in before it, so that a row that stays gets a line rather than a
// bump; nil otherwise.
func (r *Repository[T, ID]) seenStaying(ctx context.Context, before *rowKeys, key string) *seenBefore {
	if !r.c.reassert() {
		return nil
	}
	return r.seen(ctx, before, nil, key)
}

// seenMany is seen for the rows of a Many write (in its transaction's
// view: the lists' generations alone), in one round trip: each list's
// generation is read once, whatever number of rows join or leave it, and
// the upkeep of every row gets the result. before(i) is the keys of
// rows[i] before the write (nil: a new row).
func (r *Repository[T, ID]) seenMany(ctx context.Context, before func(i int) *rowKeys, rows []T) *seenBefore {
	if !r.c.lists.patchable() {
		return nil
	}
	type list struct {
		query int
		where string
	}
	wheres := make([][]string, r.c.lists.len())
	known := make(map[list]bool)
	for i := range rows {
		reads, at := r.listReads(ctx, before(i), &rows[i])
		for j, rd := range reads {
			for _, w := range rd.IDs {
				if k := (list{at[j], w}); !known[k] {
					known[k] = true
					wheres[at[j]] = append(wheres[at[j]], w)
				}
			}
		}
	}
	var reads []cacheaside.ListRead
	var at []int
	for i, q := range r.c.lists.all() {
		if len(wheres[i]) > 0 {
			reads = append(reads, cacheaside.ListRead{Lists: q.gens.lg, IDs: wheres[i]})
			at = append(at, i)
		}
	}
	return r.readSeen(ctx, "", false, reads, at)
}

// readSeen reads the list generations of reads (of queries at) and, with
// version, the version of row key, for seen and seenMany.
func (r *Repository[T, ID]) readSeen(ctx context.Context, key string, version bool, reads []cacheaside.ListRead, at []int) *seenBefore {
	got := r.c.ent.ReadBefore(ctx, key, version, reads)
	if got.VersionErr != nil {
		return nil // Redis is failing: the upkeep invalidates and bumps
	}
	s := &seenBefore{version: got.Version, fill: version}
	if r.c.lists.patchable() {
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
// repository writes through or the write patches lists (seen read their
// generations), so that the row it stores and the places its lines give
// are the row as stored (defaults, triggers, the database's precision,
// the created_at an upsert keeps).
func (r *Repository[T, ID]) returning(db *gorm.DB, seen *seenBefore) *gorm.DB {
	if !r.c.writeThrough && (seen == nil || seen.lists == nil) {
		return db
	}
	return db.Clauses(clause.Returning{})
}
