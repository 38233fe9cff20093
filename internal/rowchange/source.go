package rowchange

import "reflect"

// Source is what a repository hands package repo/cdc: its table, the
// value that queues the cache work of a change (repo/cdc declares the
// interface it must satisfy). package repo embeds a Source in
// *repo.Repository under an unexported name, so that repo/cdc asks the
// repository itself for its table (TableOf) and no process-wide registry
// maps repositories to tables: every view of a repository (a
// transaction's too) carries the same one, and it is collected with the
// repository.
type Source struct{ table any }

// NewSource returns the Source of table t.
func NewSource(t any) Source { return Source{table: t} }

// RowChangeTable returns the table, or nil for the zero Source.
func (s Source) RowChangeTable() any { return s.table }

// TableOf returns the table of owner, a value whose type embeds a Source
// (a *repo.Repository), and whether it has one; a nil pointer has none.
func TableOf(owner any) (any, bool) {
	o, ok := owner.(interface{ RowChangeTable() any })
	if !ok {
		return nil, false
	}
	if v := reflect.ValueOf(owner); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, false
	}
	t := o.RowChangeTable()
	return t, t != nil
}
