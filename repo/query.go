package repo

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/cacheaside"
)

// MaxPageSize is the largest Page.Size.
const MaxPageSize = 1000

// MaxPageOffset is the largest Page.Offset.
const MaxPageOffset = 100_000

// QueryOf declares a cached query: the rows whose Where columns equal the
// values a call gives, in the Order.
type QueryOf struct {
	// Name names the query in Redis keys and errors; it must be the same
	// in every process that declares the query, and unique among the
	// repository's queries. Required.
	Name string

	// Where are the columns (database or Go field names) a call gives
	// values for, in order: {"category_id"}, or {"customer_id", "status"}.
	// Default none: one list of all the rows.
	Where []string

	// Order is the lists' order, columns with an optional ASC or DESC:
	// "created_at DESC, id". The primary key is appended (ascending) when
	// it is not named, so that the order is total, as keyset pagination
	// needs. Order columns may not be pointers (NULL breaks keyset
	// pagination). Default: the primary key, ascending.
	Order string

	// Policy is the cacheaside Policy of the cached pages and counts (the
	// Strategy decides how a popular list's reload is shared across
	// processes, as for rows). Default: the zero Policy, cacheaside's
	// defaults. Policy.Filter must be nil.
	Policy cacheaside.Policy
}

// Page is which page of a list to read.
type Page struct {
	// Size is the most rows returned, in [1, MaxPageSize].
	Size int
	// After is the cursor returned with the previous page; "" is the
	// first page.
	After string
	// Offset skips that many rows of the list before the page (offset
	// pagination, for "page 7 of 12" links): in [0, MaxPageOffset], and
	// 0 when After is set. A page at an offset is cached and invalidated
	// like any other, but its miss makes the database read the skipped
	// rows too; keyset pages (After) stay cheap however deep. Default 0.
	Offset int
}

// QueryStats counts a query's cache activity in this process.
type QueryStats struct {
	Hits   uint64 // pages and counts served from Redis
	Misses uint64 // pages and counts not in Redis
	Loads  uint64 // pages and counts loaded from the database
	// Invalidations counts the changes writes made to lists: generation
	// bumps (of one filter value's lists, or of all lists) and lines
	// patched.
	// Fallbacks counts the bumps of all lists: a change whose old filter
	// values were unknown, or a TRUNCATE. Patches counts the lines
	// patched into lists in place by writes through the repository and by
	// repo/cdc (their pages stay cached).
	Invalidations, Fallbacks, Patches int64
}

// Query is a cached query of a repository (see "Cached queries" in the
// package doc). It is safe for concurrent use.
type Query[T any, ID comparable] struct {
	r   *Repository[T, ID]
	l   *listQuery
	ent *cacheaside.Entity[queryEntry[ID]]
}

// queryEntry is a cached page (its ids, the cursor after it) or count.
type queryEntry[ID comparable] struct {
	IDs  []ID   `json:"i,omitempty"`
	Next string `json:"c,omitempty"`
	N    int64  `json:"n,omitempty"`
	// K are the order keys of IDs, in a patchable query's window (a page
	// and the rows after it: patchWindow); More says that the list goes on
	// past the window.
	K    []string `json:"k,omitempty"`
	More bool     `json:"m,omitempty"`
	// S is the database snapshot the window was read with (snapshot), on
	// PostgreSQL: a line from the log is applied to the window only if the
	// snapshot did not see its transaction.
	S string `json:"s,omitempty"`
}

// NewQuery declares the query q on r and returns it. From then on every
// write through r (and every change the repo/cdc bridge sees for r's
// table) invalidates the query's affected lists. A column that is not one
// of T's, an Order that does not parse, an empty, blank or duplicate Name, or a
// transaction's view are errors matching ErrInvalid.
func NewQuery[T any, ID comparable](r *Repository[T, ID], q QueryOf) (*Query[T, ID], error) {
	if r == nil {
		return nil, fmt.Errorf("%w: NewQuery on a nil repository", ErrInvalid)
	}
	if r.tx != nil {
		return nil, fmt.Errorf("%w: NewQuery on a transaction's view", ErrInvalid)
	}
	c := r.c
	if strings.TrimSpace(q.Name) == "" {
		return nil, fmt.Errorf("%w: %s: a query needs a Name (got %q)", ErrInvalid, c.name, q.Name)
	}
	if q.Policy.Filter != nil {
		return nil, fmt.Errorf("%w: query %s: Policy.Filter must be nil", ErrInvalid, q.Name)
	}
	l := &listQuery{name: q.Name}
	seen := map[string]bool{}
	for _, col := range q.Where {
		f, err := c.queryField(q.Name, col)
		if err != nil {
			return nil, err
		}
		if seen[f.DBName] {
			return nil, fmt.Errorf("%w: query %s: column %s named twice in Where", ErrInvalid, q.Name, f.DBName)
		}
		seen[f.DBName] = true
		l.where = append(l.where, f)
	}
	if err := c.parseOrder(l, q.Order); err != nil {
		return nil, err
	}
	l.cols = append(append([]*schema.Field(nil), l.where...), l.order...)
	if c.softDel != nil {
		l.cols = append(l.cols, c.softDel)
	}
	l.softDel = c.softDel
	l.patchable = !slices.ContainsFunc(l.order, func(f *schema.Field) bool { return !keyable(f) })
	l.checkable = !slices.ContainsFunc(l.where, func(f *schema.Field) bool { return !exactFilter(f) })
	name := c.name + ".query." + q.Name
	ent, err := cacheaside.NewEntity[queryEntry[ID]](c.cache, name, q.Policy)
	if err != nil {
		return nil, fmt.Errorf("%w: query %s: %w", ErrInvalid, q.Name, err)
	}
	lg, err := cacheaside.NewListGenerations(c.cache, c.name+".gen."+q.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: query %s: %w", ErrInvalid, q.Name, err)
	}
	l.gens = &generations{lg: lg}
	if err := c.lists.add(l); err != nil {
		return nil, err
	}
	return &Query[T, ID]{r: r, l: l, ent: ent}, nil
}

// queryField returns T's column col.
func (c *core[T, ID]) queryField(query, col string) (*schema.Field, error) {
	f := c.sch.LookUpField(col)
	if f == nil || f.DBName == "" {
		return nil, fmt.Errorf("%w: query %s: %s has no column %q", ErrInvalid, query, c.name, col)
	}
	return f, nil
}

// parseOrder sets l's order from s.
func (c *core[T, ID]) parseOrder(l *listQuery, s string) error {
	hasPK := false
	for part := range strings.SplitSeq(s, ",") {
		words := strings.Fields(part)
		if len(words) == 0 && strings.TrimSpace(s) == "" {
			break
		}
		if len(words) == 0 || len(words) > 2 {
			return fmt.Errorf("%w: query %s: Order %q: want \"column [ASC|DESC], …\"", ErrInvalid, l.name, s)
		}
		f, err := c.queryField(l.name, words[0])
		if err != nil {
			return err
		}
		if f.FieldType.Kind() == reflect.Pointer || f == c.softDel {
			return fmt.Errorf("%w: query %s: order column %s may hold NULL", ErrInvalid, l.name, f.DBName)
		}
		desc := false
		if len(words) == 2 {
			switch strings.ToUpper(words[1]) {
			case "ASC":
			case "DESC":
				desc = true
			default:
				return fmt.Errorf("%w: query %s: Order %q: %q is not ASC or DESC", ErrInvalid, l.name, s, words[1])
			}
		}
		if hasPK || slices.Contains(l.order, f) {
			return fmt.Errorf("%w: query %s: Order %q names %s twice or after the primary key", ErrInvalid, l.name, s, f.DBName)
		}
		hasPK = f == c.pk
		l.order = append(l.order, f)
		l.desc = append(l.desc, desc)
	}
	if !hasPK {
		l.order = append(l.order, c.pk)
		l.desc = append(l.desc, false)
	}
	return nil
}

// Name returns the query's name.
func (q *Query[T, ID]) Name() string { return q.l.name }

// Stats returns the query's counters in this process.
func (q *Query[T, ID]) Stats() QueryStats {
	s, g := q.ent.Stats(), q.l.gens.lg.Stats()
	return QueryStats{
		Hits: s.Hits, Misses: s.Misses, Loads: s.Loads,
		Invalidations: g.Bumps + g.Patches, Fallbacks: g.Fallbacks, Patches: g.Patches,
	}
}

// List returns a page of the rows whose Where columns equal vals (one
// value per column, of the column's type), in the query's order, and the
// cursor of the next page ("" after the last). The page's ids come from
// Redis or, on a miss, from one SELECT (loaded once across processes as
// the Policy's Strategy says); the rows come through GetMany, so they
// share the entity cache. A read that begins after a write through the
// repository completed reflects it (see "Cached queries" in the package
// doc). Bad input (a wrong count or type of values, a page size outside
// [1, MaxPageSize], an offset outside [0, MaxPageOffset] or with a
// cursor, a cursor that was altered or belongs to other values) is an
// error matching ErrInvalid, and nothing is cached.
func (q *Query[T, ID]) List(ctx context.Context, p Page, vals ...any) (rows []T, next string, err error) {
	where, args, err := q.filter(ctx, vals)
	if err != nil {
		return nil, "", err
	}
	if p.Size < 1 || p.Size > MaxPageSize {
		return nil, "", fmt.Errorf("%w: query %s: page size %d, it must be in [1, %d]", ErrInvalid, q.l.name, p.Size, MaxPageSize)
	}
	what := "p|" + strconv.Itoa(p.Size) + "|" + p.After
	switch {
	case p.Offset < 0 || p.Offset > MaxPageOffset:
		return nil, "", fmt.Errorf("%w: query %s: page offset %d, it must be in [0, %d]", ErrInvalid, q.l.name, p.Offset, MaxPageOffset)
	case p.Offset > 0 && p.After != "":
		return nil, "", fmt.Errorf("%w: query %s: a page has an offset or a cursor, not both", ErrInvalid, q.l.name)
	case p.Offset > 0:
		what += "|" + strconv.Itoa(p.Offset)
	}
	after, err := q.l.decodeCursor(where, p.After)
	if err != nil {
		return nil, "", err
	}
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	gen, gerr := q.l.gens.read(ctx, where)
	var e queryEntry[ID]
	var ok bool
	if gerr == nil && q.l.patchable && p.Offset == 0 {
		if e, ok, err = q.window(ctx, gen, where, args, after, p); err != nil {
			return nil, "", err
		}
	}
	if !ok {
		e, err = q.cached(ctx, gen, gerr, where, what, func(ctx context.Context, _ string) (queryEntry[ID], error) {
			return q.loadPage(ctx, args, after, p.Offset, p.Size, where)
		})
		if err != nil {
			return nil, "", err
		}
	}
	got, err := q.r.GetMany(ctx, e.IDs)
	if err != nil {
		return nil, "", err
	}
	rows = make([]T, 0, len(e.IDs))
	for _, id := range e.IDs {
		// Left out: a row deleted since (by a write this read may miss),
		// and one whose own values put it in another list (holds; given
		// the row in place, as a pointer to a local would escape).
		if v, ok := got[id]; ok {
			if rows = append(rows, v); !q.l.holds(ctx, args, &rows[len(rows)-1]) {
				rows = rows[:len(rows)-1]
			}
		}
	}
	return rows, e.Next, nil
}

// Count returns how many rows have Where columns equal to vals, cached
// like a page.
func (q *Query[T, ID]) Count(ctx context.Context, vals ...any) (int64, error) {
	where, args, err := q.filter(ctx, vals)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	gen, gerr := q.l.gens.read(ctx, where)
	e, err := q.cached(ctx, gen, gerr, where, "n", func(ctx context.Context, _ string) (queryEntry[ID], error) {
		var n int64
		err := q.r.retryPlan(func() error { return q.scope(ctx, args).Count(&n).Error })
		if err != nil {
			return queryEntry[ID]{}, err
		}
		return queryEntry[ID]{N: n}, nil
	})
	return e.N, err
}

// cached returns the entry what of the lists of where from the cache of
// their current generations gen (read with error gerr), or load's. When
// Redis cannot give the generations, load's answer is returned uncached
// (fail-open, as for rows); so is an entry whose id is too long for a key
// (a huge cursor).
func (q *Query[T, ID]) cached(ctx context.Context, gen generation, gerr error, where, what string, load func(context.Context, string) (queryEntry[ID], error)) (queryEntry[ID], error) {
	var e queryEntry[ID]
	var err error
	if gerr == nil {
		id := gen.all + "." + gen.list.Exact() + "|" + where + "|" + what
		if _, kerr := q.ent.Key(id); kerr == nil {
			e, err = q.ent.Get(ctx, id, load)
			if err != nil {
				return e, wrapErr("query "+q.l.name, err)
			}
			return e, nil
		}
	}
	if cerr := ctx.Err(); cerr != nil {
		return e, cerr
	}
	e, err = load(ctx, "")
	if err != nil {
		return e, wrapErr("query "+q.l.name, err)
	}
	return e, nil
}

// window returns the keyset page p of a patchable query from the window
// cached under the base of gen, patched (patchWindow), as a page entry;
// ok is false when it cannot tell the page (the caller loads it alone).
func (q *Query[T, ID]) window(ctx context.Context, gen generation, where string, args, after []any, p Page) (e queryEntry[ID], ok bool, err error) {
	l := q.l
	lower := ""
	if after != nil {
		if lower, ok = l.orderKey(after); !ok {
			return e, false, nil
		}
	}
	id := gen.all + "." + gen.list.Base + "|" + where + "|w|" + strconv.Itoa(p.Size) + "|" + p.After
	if _, kerr := q.ent.Key(id); kerr != nil {
		return e, false, nil
	}
	w, err := q.ent.Get(ctx, id, func(ctx context.Context, _ string) (queryEntry[ID], error) {
		return q.loadWindow(ctx, args, after, p.Size+1+windowSlack)
	})
	if err != nil {
		return e, false, wrapErr("query "+l.name, err)
	}
	page, more, ok := patchWindow(w, lower, p.Size, gen.list.Patches)
	if !ok {
		return e, false, nil
	}
	e.IDs = make([]ID, len(page))
	for i, r := range page {
		e.IDs[i] = r.id
	}
	if more && len(page) > 0 {
		vals, vok := l.keyValues(page[len(page)-1].key)
		if !vok {
			return e, false, nil
		}
		if e.Next, err = l.cursorOf(where, vals); err != nil {
			return e, false, err
		}
	}
	return e, true, nil
}

// filter checks vals against the Where columns and returns their
// encoding (the lists' identity, as the write path computes it) and their
// values as the columns' types.
func (q *Query[T, ID]) filter(ctx context.Context, vals []any) (string, []any, error) {
	l := q.l
	if len(vals) != len(l.where) {
		return "", nil, fmt.Errorf("%w: query %s: %d values for %d Where columns", ErrInvalid, l.name, len(vals), len(l.where))
	}
	rv := reflect.New(q.r.c.sch.ModelType).Elem()
	args := make([]any, len(vals))
	for i, f := range l.where {
		if err := checkValue(f, vals[i]); err != nil {
			return "", nil, fmt.Errorf("%w: query %s: %w", ErrInvalid, l.name, err)
		}
		if err := f.Set(ctx, rv, vals[i]); err != nil {
			return "", nil, fmt.Errorf("%w: query %s: column %s: %w", ErrInvalid, l.name, f.DBName, err)
		}
		args[i], _ = f.ValueOf(ctx, rv)
	}
	return encodeValues(ctx, rv, l.where), args, nil
}

// checkValue reports whether v can be a value of column f: of its type,
// or of the same kind of number, string or bool (in range); nil is not.
func checkValue(f *schema.Field, v any) error {
	if v == nil {
		return fmt.Errorf("column %s: a nil value (NULL lists are not cached)", f.DBName)
	}
	ft := f.FieldType
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && !rv.IsNil() {
		rv = rv.Elem()
	}
	if rv.Type() == ft {
		return nil
	}
	probe := reflect.New(ft).Elem()
	ok := false
	switch {
	case rv.CanInt() && probe.CanInt():
		ok = !probe.OverflowInt(rv.Int())
	case rv.CanUint() && probe.CanUint():
		ok = !probe.OverflowUint(rv.Uint())
	case rv.CanInt() && probe.CanUint():
		ok = rv.Int() >= 0 && !probe.OverflowUint(uint64(rv.Int()))
	case rv.CanUint() && probe.CanInt():
		ok = rv.Uint() <= 1<<63-1 && !probe.OverflowInt(int64(rv.Uint()))
	case rv.Kind() == reflect.String && probe.Kind() == reflect.String,
		rv.Kind() == reflect.Bool && probe.Kind() == reflect.Bool:
		ok = true
	case rv.CanFloat() && probe.CanFloat():
		ok = !probe.OverflowFloat(rv.Float())
	}
	if !ok {
		return fmt.Errorf("column %s is a %v, not a %T", f.DBName, f.FieldType, v)
	}
	return nil
}

// scope is the query's rows with Where equal to args.
func (q *Query[T, ID]) scope(ctx context.Context, args []any) *gorm.DB {
	db := q.r.c.primary(ctx).Model(new(T))
	for i, f := range q.l.where {
		db = db.Where(clause.Eq{Column: column(f), Value: args[i]})
	}
	return db
}

// loadPage reads the ids of a page from the database: one SELECT of the
// primary key and the order columns, after the cursor's row or offset
// rows in, one row more than the page to know whether a next page exists.
func (q *Query[T, ID]) loadPage(ctx context.Context, args, after []any, offset, size int, where string) (queryEntry[ID], error) {
	rows, err := q.loadRows(ctx, args, after, offset, size+1)
	if err != nil {
		return queryEntry[ID]{}, err
	}
	var e queryEntry[ID]
	if len(rows) > size {
		rows = rows[:size]
		if e.Next, err = q.l.cursorOf(where, q.l.orderValues(ctx, reflect.ValueOf(&rows[size-1]).Elem())); err != nil {
			return e, err
		}
	}
	e.IDs = make([]ID, len(rows))
	for i := range rows {
		e.IDs[i], _ = q.r.c.idOf(ctx, &rows[i])
	}
	return e, nil
}

// loadWindow reads the first n rows after the cursor's row (ids and
// order keys: a patchable page's window), and whether more follow; on
// PostgreSQL with the snapshot it read them with (loadWindowSnapshot).
func (q *Query[T, ID]) loadWindow(ctx context.Context, args, after []any, n int) (queryEntry[ID], error) {
	if q.r.c.db.Dialector.Name() == "postgres" {
		return q.loadWindowSnapshot(ctx, args, after, n)
	}
	rows, err := q.loadRows(ctx, args, after, 0, n+1)
	if err != nil {
		return queryEntry[ID]{}, err
	}
	e := queryEntry[ID]{More: len(rows) > n}
	rows = rows[:min(n, len(rows))]
	e.IDs, e.K = make([]ID, len(rows)), make([]string, len(rows))
	for i := range rows {
		e.IDs[i], _ = q.r.c.idOf(ctx, &rows[i])
		var ok bool
		if e.K[i], ok = q.l.orderKey(q.l.orderValues(ctx, reflect.ValueOf(&rows[i]).Elem())); !ok {
			e.K = nil // not patchable: List loads the page alone
			break
		}
	}
	return e, nil
}

// loadRows runs the query's SELECT of the primary key and the order
// columns: limit rows after the cursor's row, or offset rows in.
func (q *Query[T, ID]) loadRows(ctx context.Context, args, after []any, offset, limit int) ([]T, error) {
	var rows []T
	err := q.r.retryPlan(func() error { return q.selectRows(ctx, args, after, offset, limit).Find(&rows).Error })
	return rows, err
}

// selectRows is loadRows' SELECT, not run.
func (q *Query[T, ID]) selectRows(ctx context.Context, args, after []any, offset, limit int) *gorm.DB {
	l := q.l
	cols := make([]string, len(l.order))
	by := make([]clause.OrderByColumn, len(l.order))
	for i, f := range l.order {
		cols[i] = f.DBName
		by[i] = clause.OrderByColumn{Column: column(f), Desc: l.desc[i]}
	}
	db := q.scope(ctx, args).Select(cols)
	if after != nil {
		db = db.Where(l.after(after))
	}
	if offset > 0 {
		db = db.Offset(offset)
	}
	return db.Clauses(clause.OrderBy{Columns: by}).Limit(limit)
}
