package repo

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// This file holds the database snapshot a list's window is loaded with,
// so that the lines repo/cdc appends (cacheaside.PatchFromLog) are applied
// to it only for the transactions it does not see: a line of a change
// the window holds already may come after a later change of the same row
// that the window holds too, and would take the row back.

// snapshot is a PostgreSQL snapshot (pg_current_snapshot) in its text
// form, "xmin:xmax:xip,…", its transaction ids cut to their 32 low bits
// (the log's): which transactions a read saw.
type snapshot struct {
	xmin, xmax uint32
	xip        []uint32
}

// parseSnapshot parses s; ok is false when it does not parse.
func parseSnapshot(s string) (snap snapshot, ok bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return snap, false
	}
	xid := func(t string) (uint32, bool) {
		n, err := strconv.ParseUint(t, 10, 64)
		return uint32(n), err == nil
	}
	var okMin, okMax bool
	snap.xmin, okMin = xid(parts[0])
	snap.xmax, okMax = xid(parts[1])
	if !okMin || !okMax {
		return snap, false
	}
	if parts[2] != "" {
		for t := range strings.SplitSeq(parts[2], ",") {
			x, ok := xid(t)
			if !ok {
				return snap, false
			}
			snap.xip = append(snap.xip, x)
		}
	}
	return snap, true
}

// sees reports whether the snapshot sees the committed transaction xid:
// it ended before the snapshot (below xmin, or below xmax and not among
// those in progress). Ids compare modulo 2³², as PostgreSQL's do.
func (s snapshot) sees(xid uint32) bool {
	before := func(a, b uint32) bool { return int32(a-b) < 0 }
	return before(xid, s.xmin) || (before(xid, s.xmax) && !slices.Contains(s.xip, xid))
}

// loadWindowSnapshot is loadWindow on PostgreSQL, with the snapshot its
// SELECT read (queryEntry.S): one statement, the query's rows joined to
// pg_current_snapshot(), which a statement reads from its own snapshot.
func (q *Query[T, ID]) loadWindowSnapshot(ctx context.Context, args, after []any, n int) (queryEntry[ID], error) {
	l := q.l
	var rows []listRow[ID]
	var snap sql.NullString
	exact := true
	err := q.r.retryPlan(func() error {
		inner := q.selectRows(ctx, args, after, 0, n+1)
		res, err := q.r.c.primary(ctx).Raw("SELECT s.ak_snapshot, w.* FROM (SELECT pg_current_snapshot()::text AS ak_snapshot) s LEFT JOIN (?) w ON true", inner).Rows()
		if err != nil {
			return err
		}
		defer res.Close()
		rows, exact, snap = nil, true, sql.NullString{}
		vals := make([]any, len(l.order))
		dest := make([]any, 1+len(vals))
		dest[0] = &snap
		for i := range vals {
			dest[1+i] = &vals[i]
		}
		for res.Next() {
			clear(vals)
			if err := res.Scan(dest...); err != nil {
				return err
			}
			if vals[len(vals)-1] == nil {
				continue // no row: the snapshot alone
			}
			rv := reflect.New(q.r.c.sch.ModelType).Elem()
			for i, f := range l.order {
				if err := f.Set(ctx, rv, vals[i]); err != nil {
					return fmt.Errorf("query %s: column %s: %w", l.name, f.DBName, err)
				}
			}
			key, ok := l.orderKey(l.orderValues(ctx, rv))
			exact = exact && ok // else not patchable: List loads the page alone
			id, _ := q.r.c.idOf(ctx, rv.Addr().Interface().(*T))
			rows = append(rows, listRow[ID]{id, key})
		}
		return res.Err()
	})
	if err != nil {
		return queryEntry[ID]{}, err
	}
	if snap.String == "" {
		return queryEntry[ID]{}, fmt.Errorf("query %s: no snapshot read", l.name)
	}
	// The join need not keep the SELECT's order; the keys are the list's.
	slices.SortFunc(rows, func(a, b listRow[ID]) int { return strings.Compare(a.key, b.key) })
	e := queryEntry[ID]{S: snap.String, More: len(rows) > n}
	rows = rows[:min(n, len(rows))]
	e.IDs, e.K = make([]ID, len(rows)), make([]string, len(rows))
	for i, r := range rows {
		e.IDs[i], e.K[i] = r.id, r.key
	}
	if !exact {
		e.K = nil
	}
	return e, nil
}
