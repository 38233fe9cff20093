package repo

import (
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
// PutMany) or change to (Update), after the commit; WarmFilter adds the
// table's, RebuildFilter drops the values no row holds any more. A value
// written some other way (Repository.DB, another program) reads as absent
// until WarmFilter or RebuildFilter runs.

// initLookupFilter opens l's filter when the repository has filters and
// l is a key that GetBy or InsertIfAbsent reads by.
func (c *core[T, ID]) initLookupFilter(l *lookup[ID], o Options) error {
	if o.Filter == nil || (len(l.fields) > 1 && l != c.uniq) {
		return nil
	}
	f, err := bloom.New(o.FilterClient, l.name, o.Filter)
	if err != nil {
		return fmt.Errorf("%w: filter %s: %w", ErrInvalidOptions, l.name, err)
	}
	l.filter = f
	return nil
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
