package repo

import (
	"context"
	"fmt"
	"reflect"

	"gorm.io/gorm/clause"

	"github.com/asidekit/asidekit/guard/bloom"
)

// WarmFilter adds every primary key of the table to the Bloom filter, and
// every value of InsertIfAbsent's unique key to its filter, reading the
// table in pages of BatchSize rows (keyset pagination on the primary key,
// so a page costs the same at the end of a big table as at its start).
// Rows written meanwhile are added by their own writes. Without
// Options.Filter it is an error matching ErrInvalidOptions.
func (r *Repository[T, ID]) WarmFilter(ctx context.Context) error {
	c := r.c
	if c.filter == nil {
		return fmt.Errorf("%w: %s: WarmFilter without Options.Filter", ErrInvalidOptions, c.name)
	}
	u := c.uniq
	if u != nil && u.filter == nil {
		u = nil
	}
	return c.scan(ctx, u, func(ids, uks []string) error {
		if err := c.filter.AddMany(ctx, ids); err != nil {
			return fmt.Errorf("repo: %s: warm filter: %w", c.name, err)
		}
		if u != nil && len(uks) > 0 {
			if err := u.filter.AddMany(ctx, uks); err != nil {
				return fmt.Errorf("repo: %s: warm filter: %w", u.name, err)
			}
		}
		return nil
	})
}

// RebuildFilter rebuilds the Bloom filters from the table through bloom's
// Rebuild: a new generation is filled from the table (streamed like
// WarmFilter), then readers switch to it, so ids of deleted rows stop
// passing and no existing id ever reads as absent meanwhile. The primary
// key filter is rebuilt first, then the unique-key filter, each from its
// own pass over the table.
func (r *Repository[T, ID]) RebuildFilter(ctx context.Context) error {
	c := r.c
	if c.filter == nil {
		return fmt.Errorf("%w: %s: RebuildFilter without Options.Filter", ErrInvalidOptions, c.name)
	}
	err := c.filter.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		return c.scan(ctx, nil, func(ids, _ []string) error { return add(ids) })
	})
	if err != nil {
		return fmt.Errorf("repo: %s: rebuild filter: %w", c.name, err)
	}
	if u := c.uniq; u != nil && u.filter != nil {
		err := u.filter.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
			return c.scan(ctx, u, func(_, uks []string) error { return add(uks) })
		})
		if err != nil {
			return fmt.Errorf("repo: %s: rebuild filter: %w", u.name, err)
		}
	}
	return nil
}

// Filter returns the Bloom filter over primary keys, nil without
// Options.Filter.
func (r *Repository[T, ID]) Filter() *bloom.Filter { return r.c.filter }

// scan reads the table's primary keys (and u's values, when u is not nil)
// in pages of batch rows ordered by primary key, and passes each page's
// cache ids to fn.
func (c *core[T, ID]) scan(ctx context.Context, u *lookup[ID], fn func(ids, uks []string) error) error {
	cols := []string{c.pk.DBName}
	if u != nil {
		for _, f := range u.fields {
			cols = append(cols, f.DBName)
		}
	}
	pkCol := clause.Column{Table: clause.CurrentTable, Name: c.pk.DBName}
	ids := make([]string, 0, c.batch)
	var uks []string
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
		ids, uks = ids[:0], uks[:0]
		for i := range rows {
			id, _ := c.idOf(ctx, &rows[i])
			key, err := c.idKey(id)
			if err != nil {
				return err
			}
			ids = append(ids, key)
			last = id
			if u != nil {
				uk, ok, err := u.key(ctx, reflect.ValueOf(&rows[i]).Elem())
				if err != nil {
					return err
				}
				if ok {
					uks = append(uks, uk)
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
