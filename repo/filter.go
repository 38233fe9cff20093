package repo

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/guard/bloom"
)

// WarmFilter adds every primary key of the table to the Bloom filter, and
// every value of a unique key to its filter (see FilterBy), reading the
// table in pages of BatchSize rows (keyset pagination on the primary key,
// so a page costs the same at the end of a big table as at its start).
// Rows written meanwhile are added by their own writes. Without
// Options.Filter it is an error matching ErrInvalidOptions.
func (r *Repository[T, ID]) WarmFilter(ctx context.Context) error {
	c := r.c
	if c.filter == nil {
		return fmt.Errorf("%w: %s: WarmFilter without Options.Filter", ErrInvalidOptions, c.name)
	}
	ls := c.filtered()
	return c.scan(ctx, ls, func(ids []string, uks [][]string) error {
		if err := c.filter.AddMany(ctx, ids); err != nil {
			return fmt.Errorf("repo: %s: warm filter: %w", c.name, err)
		}
		for i, l := range ls {
			if len(uks[i]) == 0 {
				continue
			}
			if err := l.filter.AddMany(ctx, uks[i]); err != nil {
				return fmt.Errorf("repo: %s: warm filter: %w", l.name, err)
			}
		}
		return nil
	})
}

// RebuildFilter rebuilds the Bloom filters from the table through bloom's
// Rebuild: a new generation is filled from the table (streamed like
// WarmFilter), then readers switch to it, so ids of deleted rows stop
// passing and no existing id ever reads as absent meanwhile. The primary
// key filter is rebuilt first, then each unique-key filter, each from its
// own pass over the table.
func (r *Repository[T, ID]) RebuildFilter(ctx context.Context) error {
	c := r.c
	if c.filter == nil {
		return fmt.Errorf("%w: %s: RebuildFilter without Options.Filter", ErrInvalidOptions, c.name)
	}
	err := c.filter.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		return c.scan(ctx, nil, func(ids []string, _ [][]string) error { return add(ids) })
	})
	if err != nil {
		return fmt.Errorf("repo: %s: rebuild filter: %w", c.name, err)
	}
	for _, l := range c.filtered() {
		err := l.filter.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
			return c.scan(ctx, []*lookup[ID]{l}, func(_ []string, uks [][]string) error { return add(uks[0]) })
		})
		if err != nil {
			return fmt.Errorf("repo: %s: rebuild filter: %w", l.name, err)
		}
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
		q := c.db.WithContext(ctx).Select(cols).Order(clause.OrderByColumn{Column: pkCol}).Limit(c.batch)
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
