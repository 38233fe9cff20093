package cdc

import (
	"context"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/rowchange"
)

// table is what a repository gives the change-data-capture reader:
// every repository carries one (rowchange.Source), and Register finds it
// there (rowchange.TableOf).
type table interface {
	// Table returns the table's name, optionally schema-qualified.
	Table() string
	// Queue adds the cache effects of a committed change of a row of the
	// table to w. A value it cannot decode into its field's type (and a
	// primary key the change lacks) does not stop it: it queues the safe
	// superset of the change's effects and returns the columns it could
	// not use, for the caller to count and report. Only a change it cannot
	// use at all (an unknown Kind, a missing row) is an error, and nothing
	// is queued then.
	Queue(w *cacheaside.Effects, c rowchange.Change) (undecoded []rowchange.Undecoded, err error)
	// KeyColumns returns the columns the table's cache keys are made of:
	// the primary key, the unique keys, and the filter, order and
	// soft-delete columns of its declared queries. A change's row
	// restricted to them gives the same keys as the whole row.
	KeyColumns() []string
	// InvalidateAll drops every cached row and mapping (TRUNCATE, a lost
	// slot).
	InvalidateAll(ctx context.Context) error
	// RebuildFilter rebuilds the Bloom filters from the table; without
	// filters it does nothing.
	RebuildFilter(ctx context.Context) error
	// Ping reports whether the cache's Redis answers.
	Ping(ctx context.Context) error
	// Cache returns the repository's cache, for its recovery gate (see
	// cacheaside.RecoveryGate).
	Cache() *cacheaside.Cache
	// FedByLog tells the repository that the Invalidator follows its
	// table: its lists may lag the table by the Invalidator's lag, so its
	// writes re-assert their rows' places in them.
	FedByLog()
}

// lookup returns the table of target, a repository made by repo.New.
func lookup(target any) (table, bool) {
	v, ok := rowchange.TableOf(target)
	if !ok {
		return nil, false
	}
	t, ok := v.(table)
	return t, ok
}
