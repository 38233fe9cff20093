package chaos

import (
	"fmt"
	"sort"
)

// checkRecovery checks what the reads checker leaves out: a write that
// committed but whose cache upkeep failed (repo.ErrAfterCommit, Committed)
// binds no read of another process (without repo/cdc, docs/outages.md: another
// process may serve the old entry until the writer's retry lands), but it
// binds every later read of the process that made it: that process keeps
// the invalidation pending and reads the row from the database until it
// is applied, during the Redis fault and after its heal alike. A read of
// version x by that process that began after the write ended is stale
// when x is older than the write (or present, when the write was a delete,
// and not newer than it); a read of "absent" is stale when the write was
// no delete and no delete of the row had begun before the read ended.
//
// It returns the reads so checked, how many of them began after the heal
// of a fault of their process's cache Redis (its link cut, stalled or
// isolated, or the server restarted), and the violations.
func checkRecovery(ops []Op, faults []Fault) (n, afterHeal int, vs []Violation) {
	type pk struct {
		proc int
		key  int64
	}
	committed := map[pk][]*Op{} // by End, which grows with the version
	deletes := map[int64][]*Op{}
	for i := range ops {
		op := &ops[i]
		if !isWrite(op.Kind) {
			continue
		}
		if op.Applied == Committed {
			k := pk{op.Proc, op.Keys[0]}
			committed[k] = append(committed[k], op)
		}
		if op.Kind == OpDelete && op.Applied != No {
			deletes[op.Keys[0]] = append(deletes[op.Keys[0]], op)
		}
	}
	for _, ws := range committed {
		sort.Slice(ws, func(i, j int) bool { return ws[i].End < ws[j].End })
	}
	for i := range ops {
		r := &ops[i]
		if !isRead(r.Kind) || r.Err != "" {
			continue
		}
		bound := false
		for k, key := range r.Keys {
			ws := committed[pk{r.Proc, key}]
			j := sort.Search(len(ws), func(i int) bool { return ws[i].End >= r.Start }) - 1
			if j < 0 {
				continue
			}
			bound = true
			if v := staleAfterOwn(r, key, r.Versions[k], ws[j], deletes[key]); v != nil {
				vs = append(vs, *v)
			}
		}
		if bound {
			n++
			if healedBefore(r, faults) {
				afterHeal++
			}
		}
	}
	return n, afterHeal, vs
}

// staleAfterOwn checks read r's version got of key against w, the newest
// Committed write of key by r's process that ended before r began.
func staleAfterOwn(r *Op, key, got int64, w *Op, deletes []*Op) *Violation {
	want := w.Versions[0]
	switch {
	case w.Kind == OpDelete && (got == Absent || got > want):
		return nil
	case w.Kind != OpDelete && got != Absent && got >= want:
		return nil
	case w.Kind != OpDelete && got == Absent:
		for _, d := range deletes {
			if d.Versions[0] > want && d.Start < r.End {
				return nil
			}
		}
	}
	what := fmt.Sprintf("version %d", got)
	if got == Absent {
		what = "absent"
	}
	return &Violation{Check: "recovery", Key: key, At: r.Start, Ops: []int{r.ID, w.ID},
		Msg: fmt.Sprintf("proc %d read key %d as %s at %v, but its own %s of version %d returned ErrAfterCommit at %v, before the read began",
			r.Proc, key, what, r.Start, w.Kind, want, w.End)}
}

// healedBefore reports whether a fault of r's process's cache Redis was
// healed before r began.
func healedBefore(r *Op, faults []Fault) bool {
	for _, f := range faults {
		cache := f.Kind == FaultRestart ||
			(f.Proc == r.Proc && (f.Kind == FaultIsolate || (f.Link == LinkCache && (f.Kind == FaultCut || f.Kind == FaultStall))))
		if cache && f.At+f.Dur <= r.Start {
			return true
		}
	}
	return false
}
