package repo

import (
	"context"
	"database/sql/driver"
	"encoding"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/testswitch"
)

// This file holds what the write path knows of the declared queries: which
// columns place a row in a query's lists, and the row's place (listKey).

// queryList is the queries declared on a repository, in order of
// declaration; the zero queryList has none. Queries are only added, so
// an index names the same query for the repository's life.
type queryList struct {
	mu sync.RWMutex // guards qs
	qs []*listQuery
}

// listQuery is one declared query as the write path sees it.
type listQuery struct {
	name  string
	where []*schema.Field // the filter columns
	// cols are every column whose change can move a row in the query's
	// lists: the filter and order columns, and the soft-delete column.
	cols  []*schema.Field
	order []*schema.Field // the order columns and the primary key
	desc  []bool          // per order column: descending
	gens  *generations
	// patchable says that every order column has an order key (keyable):
	// writes through the repository patch the lists instead of bumping.
	patchable bool
	softDel   *schema.Field // the soft-delete column, or nil
	// checkable says that every filter column is an integer or a bool,
	// whose values compare in Go as in PostgreSQL: List then leaves out a
	// row whose own values put it in another list (holds). A string
	// may match under a collation (or citext) what Go calls different.
	checkable bool
}

func (l *queryList) all() []*listQuery {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.qs
}

// patchable reports whether a declared query is patchable: writes then
// read its generations before their statement.
func (l *queryList) patchable() bool {
	return slices.ContainsFunc(l.all(), func(q *listQuery) bool { return q.patchable })
}

func (l *queryList) len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.qs)
}

// add declares q; a name declared already is an error.
func (l *queryList) add(q *listQuery) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.qs {
		if o.name == q.name {
			return fmt.Errorf("%w: query %q is declared already on this repository", ErrInvalid, q.name)
		}
	}
	// A new slice: readers hold the old one without the lock.
	l.qs = append(l.qs[:len(l.qs):len(l.qs)], q)
	return nil
}

// keysOf returns the place of the row rv in every declared query.
func (l *queryList) keysOf(ctx context.Context, rv reflect.Value) []listKey {
	qs := l.all()
	if len(qs) == 0 {
		return nil
	}
	out := make([]listKey, len(qs))
	for i, q := range qs {
		out[i] = q.keyOf(ctx, rv)
	}
	return out
}

// invalidateAll bumps the generation of all lists of every declared query.
func (l *queryList) invalidateAll(ctx context.Context) error {
	var w cacheaside.Effects
	for _, q := range l.all() {
		w.Reset()
		w.Add(cacheaside.Bump(q.gens.lg, allLists))
		if err := w.Run(ctx); err != nil {
			return err
		}
	}
	return nil
}

// keyOf returns the place of the row rv in q.
func (q *listQuery) keyOf(ctx context.Context, rv reflect.Value) listKey {
	k := listKey{where: encodeValues(ctx, rv, q.where), rest: encodeValues(ctx, rv, q.cols), ok: true}
	k.gone = q.softDel != nil && !isNull(q.softDel, ctx, rv)
	if q.patchable && !k.gone {
		if vals := q.orderValues(ctx, rv); utcTimes(vals) {
			k.order, _ = q.orderKey(vals)
		}
	}
	return k
}

// utcTimes reports whether every time among vals is at UTC offset 0. A
// written row's key is exact only then: a timestamp column without time
// zone keeps the wall clock, which PostgreSQL orders and a load reads
// back as UTC, so the instant of a time at another offset is not the one
// the table's rows are ordered by.
func utcTimes(vals []any) bool {
	for _, v := range vals {
		if t, ok := v.(time.Time); ok {
			if _, off := t.Zone(); off != 0 {
				return false
			}
		}
	}
	return true
}

// isNull reports whether the value of f in rv is NULL.
func isNull(f *schema.Field, ctx context.Context, rv reflect.Value) bool {
	v, _ := f.ValueOf(ctx, rv)
	return canonical(v) == "\x00null"
}

// encodeValues returns the values of fields in rv as one string, the same
// for equal values whatever path they came by (a written struct, a value
// decoded from the log, a caller's filter value set on a model). It is
// never empty: "(" + the quoted values joined by "," + ")".
func encodeValues(ctx context.Context, rv reflect.Value, fields []*schema.Field) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		v, _ := f.ValueOf(ctx, rv)
		b.WriteString(strconv.Quote(canonical(v)))
	}
	b.WriteByte(')')
	return b.String()
}

// canonical is v as text: pointers followed, times in UTC to the
// microsecond (PostgreSQL's precision), driver.Valuers by their value,
// TextMarshalers by their text; NULL is "\x00null".
func canonical(v any) string {
	rv, ok := deref(reflect.ValueOf(v))
	if !ok || !rv.IsValid() {
		return "\x00null"
	}
	switch x := rv.Interface().(type) {
	case time.Time:
		return x.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	case []byte:
		return hex.EncodeToString(x)
	case driver.Valuer:
		dv, err := x.Value()
		if err != nil {
			return fmt.Sprint(x)
		}
		return canonical(dv)
	case encoding.TextMarshaler:
		if t, err := x.MarshalText(); err == nil {
			return string(t)
		}
	}
	return fmt.Sprint(rv.Interface())
}

// lockBefore makes db's read of a row before a write (of a repository
// with unique keys or declared queries) lock the row, in a transaction on
// PostgreSQL: the unique values and the places in the lists it reads are
// then the ones the write replaces, whatever concurrent writers do, and
// no write of the row can race Put's upsert (see writeLocked). Unlocked, a
// write committed between the read and the statement leaves the mappings
// of the values it set, cached meanwhile, pointing at the row. Outside a
// transaction the read cannot lock: the statement is guarded by what was
// read instead (see "Cached queries" in the package doc). locked reports
// whether it locks.
func (r *Repository[T, ID]) lockBefore(db *gorm.DB) (_ *gorm.DB, locked bool) {
	if r.tx == nil || db.Dialector.Name() != "postgres" || (r.c.lists.len() == 0 && testswitch.TxReadUnlocked.Load()) {
		return db, false
	}
	return db.Clauses(clause.Locking{Strength: clause.LockingStrengthUpdate}), true
}
