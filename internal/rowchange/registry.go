package rowchange

import (
	"context"
	"reflect"
	"runtime"
	"sync"

	"github.com/asidekit/asidekit/cacheaside"
)

// Table is what a repository gives the change-data-capture reader.
type Table interface {
	// Table returns the table's name, optionally schema-qualified.
	Table() string
	// Queue adds the cache work of a committed change of a row of the
	// table to w. A value it cannot decode into its field's type (and a
	// primary key the change lacks) does not stop it: it queues the safe
	// superset of the change's work and returns the columns it could not
	// use, for the caller to count and report. Only a change it cannot
	// use at all (an unknown Kind, a missing row) is an error, and nothing
	// is queued then.
	Queue(w *Work, c Change) (undecoded []Undecoded, err error)
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
}

// tables maps the address of a registered repository to its Table. The
// address is kept as a number, not a pointer, so that the registry does
// not keep a repository alive; a cleanup removes the entry when the
// repository is collected (the garbage collector does not move objects).
var tables sync.Map // uintptr → Table

// Register makes t the Table of the repository at pointer owner, until
// owner is collected. t must not refer to owner.
func Register[O any](owner *O, t Table) {
	key := uintptr(reflect.ValueOf(owner).UnsafePointer())
	tables.Store(key, t)
	runtime.AddCleanup(owner, func(key uintptr) { tables.CompareAndDelete(key, t) }, key)
}

// Lookup returns the Table registered for owner, a pointer.
func Lookup(owner any) (Table, bool) {
	v := reflect.ValueOf(owner)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, false
	}
	t, ok := tables.Load(uintptr(v.UnsafePointer()))
	if !ok {
		return nil, false
	}
	return t.(Table), true
}
