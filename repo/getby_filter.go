package repo

import (
	"context"
	"fmt"

	"github.com/asidekit/asidekit/guard/bloom"
)

// The unique keys' Bloom filters. With Options.Filter, every single-column
// unique key (what GetBy reads by) and InsertIfAbsent's key get a filter of
// their values, named like their mapping entity ("<name>.by.<column>") and
// sized by Options.Filter. A GetBy of a value the filter has never seen
// answers ErrNotFound with no SELECT: the filter is the mapping entity's
// Policy.Filter, asked on every cache miss. Writes through the repository
// add the values they create (Create, Put, InsertIfAbsent, CreateMany,
// PutMany, UpdateColumns, Modify) or change to (Update), after the commit;
// RebuildFilter drops the values no row holds any more, and a filter not
// known complete rebuilds itself (see WarmFilter). A value written some
// other way (Repository.DB, another program) without repo/cdc reads as
// absent until a rebuild.

// initLookupFilter opens l's filter when the repository has filters and
// l is a key that GetBy or InsertIfAbsent reads by.
func (c *core[T, ID]) initLookupFilter(l *lookup[ID], o Options) error {
	if o.Filter == nil || (len(l.fields) > 1 && l != c.uniq) {
		return nil
	}
	f, err := bloom.New(o.FilterClient, l.name, c.filterOptions(o, l))
	if err != nil {
		return fmt.Errorf("%w: filter %s: %w", ErrInvalid, l.name, err)
	}
	l.filter = f
	return nil
}

// filterOptions returns Options.Filter with the Source of the filter of
// lookup l (nil: of the primary keys): a scan of the table, which the
// filter runs in the background to rebuild itself when it finds its state
// lost or never built.
func (c *core[T, ID]) filterOptions(o Options, l *lookup[ID]) *bloom.Options {
	fo := *o.Filter
	fo.Source = c.filterSource(l)
	return &fo
}

// filterSource streams the keys of l's filter (nil: the primary keys')
// from the table.
func (c *core[T, ID]) filterSource(l *lookup[ID]) bloom.Source {
	if l == nil {
		return func(ctx context.Context, add func([]string) error) error {
			return c.scan(ctx, nil, func(ids []string, _ [][]string) error { return add(ids) })
		}
	}
	return func(ctx context.Context, add func([]string) error) error {
		return c.scan(ctx, []*lookup[ID]{l}, func(_ []string, uks [][]string) error { return add(uks[0]) })
	}
}

// filtered returns the lookups that have a filter.
func (c *core[T, ID]) filtered() []*lookup[ID] {
	var ls []*lookup[ID]
	for _, l := range c.lookups {
		if l.filter != nil {
			ls = append(ls, l)
		}
	}
	return ls
}

// FilterBy returns the Bloom filter of the unique column's values that
// GetBy(ctx, column, …) consults (column is a database or Go field name),
// or nil when there is none: without Options.Filter, or when no
// single-column unique index covers column.
func (r *Repository[T, ID]) FilterBy(column string) *bloom.Filter {
	l, err := r.c.lookupBy(column)
	if err != nil {
		return nil
	}
	return l.filter
}
