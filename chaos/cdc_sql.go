package chaos

import (
	"context"
	"math/rand/v2"
)

// The CDC phase's plain-SQL writes: statements on a process's pool,
// outside its repository, which only the Invalidators see.

// verExpr is how a plain-SQL write sets the row's version: a value, or in
// a pair (pairVersion) one that depends on whether the repository's
// Update committed first.
type verExpr struct {
	sql  string
	args []any
}

// fixedVersion sets the version to v.
func fixedVersion(v int64) verExpr { return verExpr{"?::bigint", []any{v}} }

// pairVersion is the SQL half of a pair whose repository half writes
// version rv: rv+1 when the row holds rv (the repository's Update
// committed first), else rv-1. PostgreSQL evaluates it on the row as it
// is when the UPDATE holds the row's lock, so the versions of a pair
// follow the order of its COMMITs, as the reads check needs.
func pairVersion(rv int64) verExpr {
	return verExpr{"CASE WHEN version = ?::bigint THEN ?::bigint ELSE ?::bigint END", []any{rv, rv + 1, rv - 1}}
}

// sqlWrite writes row id with one plain-SQL statement through p's pool,
// then waits until p's Invalidator applied it: the write ends then.
func (w *cdcWork) sqlWrite(p *cdcProc, rng *rand.Rand, ks *cdcKey, id int64) {
	ks.ver++
	op, ver, row, err := w.sqlStmt(p, rng, ks, id, fixedVersion(ks.ver), false)
	if op.Applied == Yes {
		_, end, werr := w.sync(p)
		op.End = end
		if werr != nil {
			op.Applied, err = Committed, werr
		}
	}
	w.run.hist.add(withState(op, ver, row), err)
	w.reread(ks, id)
}

// sqlStmt runs one plain-SQL write of row id, chosen by the row's state:
// an INSERT of an absent row; else an UPDATE that moves it (a new group,
// time and rank; a soft-deleted row stays deleted), a soft delete of a
// live row, an undelete of a soft-deleted one, or (unless in a pair) a
// DELETE. It returns the write's operation (its End is the statement's),
// the version written, and the row after it (nil: absent).
func (w *cdcWork) sqlStmt(p *cdcProc, rng *rand.Rand, ks *cdcKey, id int64, ver verExpr, pair bool) (Op, int64, *CDCItem, error) {
	nx := w.next(rng, id, ver.args[0].(int64))
	live := ks.row != nil && !ks.row.DeletedAt.Valid
	op := Op{Proc: p.id, Kind: OpUpdate, Keys: []int64{id}}
	var q string
	var args []any
	set := func(cols string, vals ...any) {
		q = "UPDATE chaos_cdc_items SET " + cols + ", version = " + ver.sql + " WHERE id = ? RETURNING *"
		args = append(append(vals, ver.args...), id)
	}
	switch n := rng.IntN(100); {
	case ks.row == nil:
		op.Kind, op.Token = OpCreate, "sql insert"
		q = "INSERT INTO chaos_cdc_items (id, grp, touched, rank, version) VALUES (?, ?, ?, ?, " + ver.sql + ") RETURNING *"
		args = append([]any{id, nx.Grp, nx.Touched, nx.Rank}, ver.args...)
	case !pair && n < 15:
		op.Kind, op.Token = OpDelete, "sql delete"
		q, args = "DELETE FROM chaos_cdc_items WHERE id = ? RETURNING *", []any{id}
	case live && n < 40:
		op.Kind, op.Token = OpDelete, "sql soft delete"
		set("deleted_at = now()")
	case !live && n < 70:
		op.Token = "sql undelete"
		set("deleted_at = NULL, touched = ?", nx.Touched)
	default:
		op.Token = "sql move"
		set("grp = ?, touched = ?, rank = ?", nx.Grp, nx.Touched, nx.Rank)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var rows []CDCItem
	op.Start = w.run.clk.now()
	err := p.db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error
	op.End = w.run.clk.now()
	op.Applied = applied(err)
	switch {
	case err != nil:
		if op.Kind == OpDelete {
			return op, nx.Version, nil, err
		}
		return op, nx.Version, &nx, err
	case len(rows) == 0:
		op.Applied = No
		return op, nx.Version, nil, nil
	case op.Token == "sql delete":
		return op, nx.Version, nil, nil
	}
	return op, rows[0].Version, &rows[0], nil
}
