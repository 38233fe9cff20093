package chaos

import (
	"fmt"
	"slices"
	"sort"

	"github.com/asidekit/asidekit/repo/cdc"
)

// checkCDC judges the CDC phase's history by the consistency promise with
// CDC: a plain-SQL write binds the reads that begin after the Invalidator
// applied it (its End is when Wait returned), a repository write those
// that begin after it returned nil, a pair those that begin after both
// its writes returned and the Invalidator applied both. Then:
//
//   - reads (the "write-through × CDC" row): no Get returns a version older
//     than a binding write, or finds a row absent that one left present,
//     or present that one deleted or soft-deleted (checkReads: a write
//     that leaves the row absent is a delete);
//   - lists (the "lists × CDC" row): no list read misses a row a binding
//     write put in its group or keeps one taken out (moved, deleted,
//     soft-deleted) (checkLists, on the writes' groups), and the rows whose
//     place was settled during the read come in the query's order by the
//     time and rank binding writes left them with (checkCDCOrder);
//   - the Invalidators skipped no change and decoded every one (a
//     violation of the lists row each).
//
// Every violation's Check is "cdc".
func checkCDC(ops []Op, st cdc.Stats) (reads int, readVs []Violation, lists int, listVs []Violation, errs counts) {
	errs = counts{}
	for _, op := range ops {
		if op.ErrKind != "" {
			errs[op.ErrKind]++
		}
	}
	reads, readVs = checkReads(ops)
	lists, listVs = checkLists(listView(ops))
	listVs = append(listVs, checkCDCOrder(ops)...)
	for _, c := range []struct {
		n    uint64
		what string
	}{{st.Skipped, "skipped"}, {st.Undecoded, "left undecoded"}} {
		if c.n > 0 {
			listVs = append(listVs, Violation{Msg: fmt.Sprintf("the Invalidators %s %d changes of the registered table (last error: %v)", c.what, c.n, st.LastError)})
		}
	}
	for _, vs := range [][]Violation{readVs, listVs} {
		for i := range vs {
			vs[i].Check = "cdc"
		}
	}
	return reads, readVs, lists, listVs, errs
}

// listView is the phase's history as checkLists reads it: its writes as
// list writes (the group they left the row in, 0 when absent), its list
// reads with their ids in ascending order (the query's order is
// checkCDCOrder's to judge; a row listed twice stays a violation).
func listView(ops []Op) []Op {
	var out []Op
	for _, op := range ops {
		switch {
		case isWrite(op.Kind):
			token := "update"
			switch {
			case op.Kind == OpCreate:
				token = "create"
			case op.Value == 0:
				token = "delete"
			}
			op.Kind, op.Token = OpListWrite, token
		case op.Kind == OpList:
			op.Keys = slices.Sorted(slices.Values(op.Keys))
		default:
			continue
		}
		out = append(out, op)
	}
	return out
}

// checkCDCOrder checks each list read's order: "time" lists newest first,
// "rank" lists by rank, ties by id. It judges the rows listed whose place
// was settled while the read ran: the newest write that returned before
// the read began left the row in the read's group, every write of the row
// returned nil, and none began before the read ended that had not
// returned before it began. Consecutive settled rows must come in the
// order of the places those writes left them in.
func checkCDCOrder(ops []Op) (vs []Violation) {
	writes := map[int64][]*Op{} // per row, by version
	for i := range ops {
		if op := &ops[i]; isWrite(op.Kind) {
			writes[op.Keys[0]] = append(writes[op.Keys[0]], op)
		}
	}
	for _, ws := range writes {
		sort.Slice(ws, func(i, j int) bool { return ws[i].Versions[0] < ws[j].Versions[0] })
	}
	for i := range ops {
		r := &ops[i]
		if r.Kind != OpList || r.Err != "" {
			continue
		}
		k := 0 // the index of the read's query's order value in Sort
		if r.Token == "rank" {
			k = 1
		}
		var prev *Op
		var prevID int64
		for _, id := range r.Keys {
			w := settledPlace(r, writes[id])
			if w == nil || len(w.Sort) != 2 {
				continue
			}
			if prev != nil && !inOrder(k, prev.Sort[k], prevID, w.Sort[k], id) {
				vs = append(vs, Violation{Key: id, At: r.Start, Ops: []int{r.ID, prev.ID, w.ID},
					Msg: fmt.Sprintf("proc %d listed group %d by %s at %v out of order: row %d (%d, left by the write of version %d) after row %d (%d, left by the write of version %d)",
						r.Proc, r.Value, r.Token, r.Start, id, w.Sort[k], w.Versions[0], prevID, prev.Sort[k], prev.Versions[0])})
			}
			prev, prevID = w, id
		}
	}
	return vs
}

// settledPlace returns the write whose place of the row the list read r
// must show (see checkCDCOrder), nil when the row was not settled in r's
// group during r.
func settledPlace(r *Op, ws []*Op) *Op {
	var req *Op
	for _, w := range ws {
		switch {
		case w.Applied == No:
		case w.Applied != Yes:
			return nil // its outcome, or its upkeep's, is unknown
		case w.End < r.Start:
			req = w
		case w.Start < r.End:
			return nil // concurrent with the read
		}
	}
	if req == nil || req.Value != r.Value {
		return nil
	}
	return req
}

// inOrder reports whether a row (order value a, id ida) comes before one
// with b, idb in a list ordered by value k: 0, time, newest first; 1,
// rank, ascending; ties by id.
func inOrder(k int, a, ida, b, idb int64) bool {
	if a == b {
		return ida < idb
	}
	if k == 0 {
		return a > b
	}
	return a < b
}
