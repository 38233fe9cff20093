package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
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
// until a later bump of their generation, and a later write of the row
// that keeps it in its group bumps nothing (repo's rule: a change that
// does not move a row leaves its lists alone). So until then a read of
// such a group may list the row and need not, whatever the row's later
// writes that kept it there: a group is healed only by a write (of any
// row) certain to have bumped it, that began after the lossy write ended
// and completed before the read began (bumps). Ids must come in the
// query's order (ascending), each once.
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
	bumps := certainBumps(writes)
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
			if may, _, req := listAllowed(r, g, writes[id], bumps[g]); !may {
				bad(id, fmt.Sprintf("proc %d listed row %d in group %d at %v, but %s", r.Proc, id, g, r.Start, describe(req, id)), req)
			}
		}
		for id := range members[g] {
			if listed[id] {
				continue
			}
			if _, must, req := listAllowed(r, g, writes[id], bumps[g]); must {
				bad(id, fmt.Sprintf("proc %d listed group %d at %v without row %d, but %s", r.Proc, g, r.Start, id, describe(req, id)), req)
			}
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].At < vs[j].At })
	return reads, vs
}

// listAllowed reports whether the read r of group g may list the row
// whose writes are ws (by version), and whether it must; req is the
// newest write that completed before r began (nil: none). bumps are the
// writes certain to have bumped g's generation.
func listAllowed(r *Op, g int64, ws []*Op, bumps *bumpSet) (may, must bool, req *Op) {
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
		if (w.Value == g || slices.Contains(statesBefore(ws, j), g)) && !bumps.healed(w, r) {
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

// bumpSet is the writes certain to have bumped one group's generation,
// by start, with the earliest end of each suffix.
type bumpSet struct {
	starts, minEnd []time.Duration
}

// certainBumps returns, per group, the writes certain to have bumped its
// lists' generation: writes that returned nil and moved their row (every
// state it may have been in before differs from the one after) into the
// group, or out of it (the row was certainly in it before). A create that
// returned nil bumps its group whatever came before.
func certainBumps(writes map[int64][]*Op) map[int64]*bumpSet {
	by := map[int64][]*Op{}
	for _, ws := range writes {
		for j, w := range ws {
			if w.Applied != Yes {
				continue
			}
			before := statesBefore(ws, j)
			if w.Value != 0 && (w.Token == "create" || !slices.Contains(before, w.Value)) {
				by[w.Value] = append(by[w.Value], w)
			}
			if len(before) == 1 && before[0] != 0 && before[0] != w.Value {
				by[before[0]] = append(by[before[0]], w)
			}
		}
	}
	sets := make(map[int64]*bumpSet, len(by))
	for g, bs := range by {
		sort.Slice(bs, func(i, j int) bool { return bs[i].Start < bs[j].Start })
		s := &bumpSet{starts: make([]time.Duration, len(bs)), minEnd: make([]time.Duration, len(bs))}
		for i := len(bs) - 1; i >= 0; i-- {
			s.starts[i], s.minEnd[i] = bs[i].Start, bs[i].End
			if i+1 < len(bs) {
				s.minEnd[i] = min(s.minEnd[i], s.minEnd[i+1])
			}
		}
		sets[g] = s
	}
	return sets
}

// healed reports whether one of the group's bumps began after the lossy
// write w ended, so after its commit, and completed before the read r
// began: the group's pages r can see were loaded after w.
func (s *bumpSet) healed(w, r *Op) bool {
	if s == nil {
		return false
	}
	i := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > w.End })
	return i < len(s.starts) && s.minEnd[i] < r.Start
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
