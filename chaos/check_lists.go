package chaos

import (
	"fmt"
	"slices"
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
// committed while its list invalidations were lost (only repo/cdc would
// see it) or are still pending in another process's background retry.
// The lists of the groups the row left and joined then stay as they were
// until that retry: writes of the list's other rows patch it in place
// (repo's list patches are per row), and a later write of the row that
// does not move it changes nothing (repo's rule: a change that does not
// move a row leaves its lists alone). So until then a read of such a
// group may list the row and need not, whatever the row's later writes
// that kept it there: the row is settled in a group only by a write of
// the row certain to have patched (or bumped) that group, completed
// before the read began (rowHealed). Ids must come in the query's order (ascending), each once.
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
	for j := 0; j <= ri; j++ {
		w := ws[j]
		if w.Applied != Maybe && w.Applied != Committed {
			continue
		}
		if (w.Value == g || slices.Contains(statesBefore(ws, j), g)) && !rowHealed(ws, j, ri, g) {
			may, must = true, false
		}
	}
	return may, must, req
}

// statesBefore returns the states (groups, 0: absent) the row may have
// been in just before its write ws[j]: the state after the newest earlier
// write known to have happened (Yes, Committed), or before any write, and
// the states after the writes of unknown outcome since.
func statesBefore(ws []*Op, j int) []int64 {
	var out []int64
	for i := j - 1; i >= 0; i-- {
		switch ws[i].Applied {
		case No:
			continue
		case Yes, Committed:
			return append(out, ws[i].Value)
		}
		out = append(out, ws[i].Value)
	}
	return append(out, 0)
}

// rowHealed reports whether a write of the row among ws[j+1 : ri+1]
// (those that completed before the read; writes of a row are serialised,
// so they began after the lossy write ws[j] ended) returned nil and
// certainly changed the row's place in
// group g: it moved the row into g (or created it there) from a place
// certainly elsewhere, or out of g from a place certainly in it. Its
// patch (or bump) of g then says where the row is, whatever ws[j] left.
func rowHealed(ws []*Op, j, ri int, g int64) bool {
	for k := j + 1; k <= ri; k++ {
		w := ws[k]
		if w.Applied != Yes {
			continue
		}
		before := statesBefore(ws, k)
		if w.Value == g && (w.Token == "create" || !slices.Contains(before, g)) {
			return true
		}
		if w.Value != g && len(before) == 1 && before[0] == g {
			return true
		}
	}
	return false
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
