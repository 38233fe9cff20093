package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/guard/bloom"
)

// WarmFilter makes the Bloom filters complete: each one not known to be
// (never filled, or its keys lost to a Redis restart, a FLUSHALL or an
// eviction) is rebuilt from the table as RebuildFilter does; a complete
// one costs one check. A filter not known complete answers "maybe" for
// every key, so reads stay correct meanwhile, and it rebuilds itself in
// the background on its first check (one process at a time, under a lease
// in Redis): WarmFilter is for a service that wants its filters ready
// before it listens. Without Options.Filter it is an error matching
// ErrInvalid.
func (r *Repository[T, ID]) WarmFilter(ctx context.Context) error {
	return r.c.rebuildFilters(ctx, false)
}

// RebuildFilter rebuilds the Bloom filters from the table through bloom's
// Rebuild: a new generation is filled from the table (read in pages of
// BatchSize rows, keyset pagination on the primary key, so a page costs
// the same at the end of a big table as at its start), then readers
// switch to it, so ids of deleted rows stop passing and no existing id
// ever reads as absent meanwhile. The primary key filter is rebuilt first,
// then each unique-key filter, each from its own pass over the table.
func (r *Repository[T, ID]) RebuildFilter(ctx context.Context) error {
	return r.c.rebuildFilters(ctx, true)
}

// rebuildFilters rebuilds every filter, or with all false those that are
// not ready.
func (c *core[T, ID]) rebuildFilters(ctx context.Context, all bool) error {
	if c.filter == nil {
		return fmt.Errorf("%w: %s: filter without Options.Filter", ErrInvalid, c.name)
	}
	if err := rebuild(ctx, c.filter, c.filterSource(nil), all); err != nil {
		return fmt.Errorf("repo: %s: rebuild filter: %w", c.name, err)
	}
	for _, l := range c.filtered() {
		if err := rebuild(ctx, l.filter, c.filterSource(l), all); err != nil {
			return fmt.Errorf("repo: %s: rebuild filter: %w", l.name, err)
		}
	}
	return nil
}

// rebuild rebuilds f from src, or with all false only when f is not ready.
// A rebuild superseded by another (the filter's own automatic one, started
// by a check meanwhile) is tried again, a few times at most.
func rebuild(ctx context.Context, f *bloom.Filter, src bloom.Source, all bool) error {
	var err error
	for range 4 {
		if !all {
			// Stats, not Ready: Ready would start the filter's own
			// automatic rebuild beside this one.
			st, serr := f.Stats(ctx)
			if serr != nil {
				return serr
			}
			if st.UntrustedShards == 0 {
				return nil
			}
		}
		if err = f.Rebuild(ctx, src); !errors.Is(err, bloom.ErrRebuildSuperseded) {
			return err
		}
	}
	return err
}

// Close stops the Bloom filters' background rebuilds, waiting for one
// that runs. The repository stays usable; its filters no longer rebuild
// themselves. Close is for the end of a service or a test; it always
// returns nil.
func (r *Repository[T, ID]) Close() error {
	if r.c.filter == nil {
		return nil
	}
	_ = r.c.filter.Close()
	for _, l := range r.c.filtered() {
		_ = l.filter.Close()
	}
	return nil
}

// Filter returns the Bloom filter over primary keys, nil without
// Options.Filter.
func (r *Repository[T, ID]) Filter() *bloom.Filter { return r.c.filter }

// scan reads the table's primary keys (and the values of the lookups ls)
// in pages of batch rows ordered by primary key, and passes each page's
// cache ids to fn, with uks[i] the values of ls[i] (NULLs left out).
func (c *core[T, ID]) scan(ctx context.Context, ls []*lookup[ID], fn func(ids []string, uks [][]string) error) error {
	cols := []string{c.pk.DBName}
	for _, l := range ls {
		for _, f := range l.fields {
			if !slices.Contains(cols, f.DBName) {
				cols = append(cols, f.DBName)
			}
		}
	}
	pkCol := clause.Column{Table: clause.CurrentTable, Name: c.pk.DBName}
	ids := make([]string, 0, c.batch)
	uks := make([][]string, len(ls))
	var last ID
	for page := 0; ; page++ {
		q := c.primary(ctx).Select(cols).Order(clause.OrderByColumn{Column: pkCol}).Limit(c.batch)
		if page > 0 {
			q = q.Where(clause.Gt{Column: pkCol, Value: last})
		}
		var rows []T
		if err := q.Find(&rows).Error; err != nil {
			return fmt.Errorf("repo: %s: scan: %w", c.name, err)
		}
		if len(rows) == 0 {
			return nil
		}
		ids = ids[:0]
		for i := range uks {
			uks[i] = uks[i][:0]
		}
		for i := range rows {
			id, _ := c.idOf(ctx, &rows[i])
			key, err := c.idKey(id)
			if err != nil {
				return err
			}
			ids = append(ids, key)
			last = id
			rv := reflect.ValueOf(&rows[i]).Elem()
			for j, l := range ls {
				uk, ok, err := l.key(ctx, rv)
				if err != nil {
					return err
				}
				if ok {
					uks[j] = append(uks[j], uk)
				}
			}
		}
		if err := fn(ids, uks); err != nil {
			return err
		}
		if len(rows) < c.batch {
			return nil
		}
	}
}
