package chaos

import (
	"fmt"
	"sort"
)

// checkLists judges every list read (OpList) against the list workload's
// writes (OpListWrite): a list read that began after a write completed
// must reflect it. Writes of a row are serialised, so version order is
// their real-time order. For a read of group g, each row may be listed
// when g is one of the states the row may have been in during the read,
// and must be listed when it is all of them:
//
//   - the state after the newest write that completed (returned nil)
//     before the read began, or the state before any write;
//   - the state after every later write that may have happened (not
//     known to have failed) and began before the read ended: writes
//     concurrent with the read, and writes whose outcome is unknown or
//     whose invalidations were left to the background retries, which
//     bind no read.
//
// A write of unknown outcome (Maybe, Committed) earlier still may have
// committed while its list invalidations were lost: only repo/cdc would
// see it. The lists of the groups the row left and joined then may stay
// as they were, so the read may list the row in either group (but need
// not), whatever came after; the converge check holds the rows
// themselves to the table. Ids must come in the query's order
// (ascending), each once.
func checkLists(ops []Op) (reads int, vs []Violation) {
	writes := map[int64][]*Op{}           // per row, by version
	members := map[int64]map[int64]bool{} // per group: every row that may have been in it
	for i := range ops {
		op := &ops[i]
		if op.Kind != OpListWrite {
			continue
		}
		id := op.Keys[0]
		writes[id] = append(writes[id], op)
		if op.Applied != No && op.Value != 0 {
			if members[op.Value] == nil {
				members[op.Value] = map[int64]bool{}
			}
			members[op.Value][id] = true
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
		reads++
		g := r.Value
		bad := func(key int64, msg string, with *Op) {
			v := Violation{Check: "lists", Key: key, At: r.Start, Msg: msg, Ops: []int{r.ID}}
			if with != nil {
				v.Ops = append(v.Ops, with.ID)
			}
			vs = append(vs, v)
		}
		listed := make(map[int64]bool, len(r.Keys))
		for k, id := range r.Keys {
			if k > 0 && r.Keys[k-1] >= id {
				bad(id, fmt.Sprintf("proc %d listed group %d at %v out of order: %d after %d", r.Proc, g, r.Start, id, r.Keys[k-1]), nil)
			}
			listed[id] = true
			if may, _, req := listAllowed(r, g, writes[id]); !may {
				bad(id, fmt.Sprintf("proc %d listed row %d in group %d at %v, but %s", r.Proc, id, g, r.Start, describe(req, id)), req)
			}
		}
		for id := range members[g] {
			if listed[id] {
				continue
			}
			if _, must, req := listAllowed(r, g, writes[id]); must {
				bad(id, fmt.Sprintf("proc %d listed group %d at %v without row %d, but %s", r.Proc, g, r.Start, id, describe(req, id)), req)
			}
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].At < vs[j].At })
	return reads, vs
}

// listAllowed reports whether the read r of group g may list the row
// whose writes are ws (by version), and whether it must; req is the
// newest write that completed before r began (nil: none).
func listAllowed(r *Op, g int64, ws []*Op) (may, must bool, req *Op) {
	n := sort.Search(len(ws), func(i int) bool { return ws[i].End >= r.Start })
	ri := n - 1
	for ri >= 0 && ws[ri].Applied != Yes {
		ri--
	}
	var base int64 // no row before any write
	if ri >= 0 {
		req, base = ws[ri], ws[ri].Value
	}
	may, must = base == g, base == g
	for _, w := range ws[ri+1:] {
		if w.Start >= r.End {
			break
		}
		if w.Applied != No {
			may = may || w.Value == g
			must = must && w.Value == g
		}
	}
	prev := int64(0) // the state before ws[j], as far as writes that may have happened tell
	for j := 0; j <= ri; j++ {
		if a := ws[j].Applied; a == Maybe || a == Committed {
			may = may || prev == g || ws[j].Value == g
		}
		if ws[j].Applied != No {
			prev = ws[j].Value
		}
	}
	return may, must, req
}

// describe says what the write req left row id as.
func describe(req *Op, id int64) string {
	if req == nil {
		return fmt.Sprintf("row %d did not exist before the read began", id)
	}
	state := fmt.Sprintf("in group %d", req.Value)
	if req.Value == 0 {
		state = "deleted"
	}
	return fmt.Sprintf("the %s of version %d by proc %d completed at %v, before the read began, leaving it %s", req.Token, req.Versions[0], req.Proc, req.End, state)
}
