package repo

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/cacheaside"
)

// Get returns the row with primary key id, from the cache or, on a miss,
// from the database (and caches it). An absent row is ErrNotFound.
func (r *Repository[T, ID]) Get(ctx context.Context, id ID) (T, error) {
	var zero T
	key, err := r.c.idKey(id)
	if err != nil {
		return zero, err
	}
	if r.tx != nil {
		return r.loadOne(ctx, key, id)
	}
	load := r.c.byKey // no closure per call: a near cache hit allocates nothing more
	if load == nil {
		load = func(ctx context.Context, _ string) (T, error) { return r.loadOne(ctx, key, id) }
	}
	v, err := r.c.ent.Get(ctx, key, load)
	if err != nil {
		return zero, r.c.mapErr(key, err)
	}
	return v, nil
}

// loadOne reads one row from the database.
func (r *Repository[T, ID]) loadOne(ctx context.Context, key string, id ID) (T, error) {
	var rows []T
	// Find with a limit rather than Take: an absent row is an expected
	// answer here, not an error for GORM's logger.
	err := r.retryPlan(func() error {
		return r.loadRows(ctx, r.c.pkEq(id), 1, &rows)
	})
	if err != nil {
		var zero T
		return zero, err // mapErr adds the context
	}
	if len(rows) == 0 {
		var zero T
		return zero, ErrNotFound
	}
	return rows[0], nil
}

// GetMany returns the rows of ids that exist, keyed by id; absent ids are
// left out of the map (and cached as absent). Duplicate ids are read once.
// On an error the map holds what could be read (hits, and stale values
// within Grace).
// Outside a transaction the batch costs one MGET (one per slot on a
// Cluster) and, for the misses, one SELECT … IN per BatchSize ids. With
// the Mutex, AsyncRefresh and EarlyRefresh strategies the misses are
// leased first (one more round trip), so that concurrent GetMany and Get
// calls across processes load each id once; ids another caller is loading
// are awaited, as Get awaits them.
func (r *Repository[T, ID]) GetMany(ctx context.Context, ids []ID) (map[ID]T, error) {
	keys := make([]string, 0, len(ids))
	byKey := make(map[string]ID, len(ids))
	for _, id := range ids {
		key, err := r.c.idKey(id)
		if err != nil {
			return nil, err
		}
		if _, dup := byKey[key]; dup {
			continue
		}
		byKey[key] = id
		keys = append(keys, key)
	}
	out := make(map[ID]T, len(keys))
	if len(keys) == 0 {
		return out, ctx.Err()
	}
	if r.tx != nil {
		rows, err := r.loadMany(ctx, keys, byKey)
		for k, v := range rows {
			out[byKey[k]] = v
		}
		return out, err
	}
	got, err := r.c.ent.GetMany(ctx, keys, func(ctx context.Context, miss []string) (map[string]T, error) {
		return r.loadMany(ctx, miss, byKey)
	})
	for k, v := range got {
		out[byKey[k]] = v
	}
	if err != nil {
		return out, mapErr(r.c.name, fmt.Sprintf("(%d ids)", len(keys)), err)
	}
	return out, nil
}

// loadMany reads the rows of keys from the database, BatchSize ids per
// SELECT, keyed by cache id.
func (r *Repository[T, ID]) loadMany(ctx context.Context, keys []string, byKey map[string]ID) (map[string]T, error) {
	out := make(map[string]T, len(keys))
	col := clause.Column{Table: clause.CurrentTable, Name: r.c.pk.DBName}
	// []any, not []ID: GORM would expand an ID that is itself an array
	// (a [16]byte uuid) into a row value.
	ids := make([]any, 0, min(len(keys), r.c.batch))
	for start := 0; start < len(keys); start += r.c.batch {
		ids = ids[:0]
		for _, k := range keys[start:min(start+r.c.batch, len(keys))] {
			ids = append(ids, byKey[k])
		}
		var rows []T
		err := r.retryPlan(func() error {
			return r.loadRows(ctx, clause.IN{Column: col, Values: ids}, 0, &rows)
		})
		if err != nil {
			return nil, fmt.Errorf("load %d ids: %w", len(ids), err) // mapErr adds the context
		}
		for i := range rows {
			id, _ := r.c.idOf(ctx, &rows[i])
			k, err := r.c.idKey(id)
			if err != nil {
				return nil, err
			}
			out[k] = rows[i]
		}
	}
	return out, nil
}

// Exists reports whether the row with primary key id exists. It reads
// through the cache like Get (and so caches the row).
func (r *Repository[T, ID]) Exists(ctx context.Context, id ID) (bool, error) {
	_, err := r.Get(ctx, id)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound):
		return false, nil
	}
	return false, err
}

// mapErr gives a cacheaside error the repository's shape: a not-found
// answer (cached, filtered or loaded) becomes ErrNotFound, anything else
// gets the entity and id.
func (c *core[T, ID]) mapErr(key string, err error) error {
	return mapErr(c.name, key, err)
}

func mapErr(name, key string, err error) error {
	switch {
	case errors.Is(err, cacheaside.ErrNotFound): // ErrNotFound matches it too
		return notFoundErr(name, key)
	case errors.Is(err, cacheaside.ErrInvalidID):
		return fmt.Errorf("%w: %s: %w", ErrInvalidID, name, err)
	}
	return wrapErr(subject(name, key), err)
}

// subject names an id of an entity in an error: the id quoted, so that
// an odd one (spaces, control bytes) reads unambiguously.
func subject(name, key string) string { return name + " " + strconv.Quote(key) }

// notFoundErr is ErrNotFound with the entity and id.
func notFoundErr(name, key string) error {
	return wrapErr(subject(name, key), ErrNotFound)
}
