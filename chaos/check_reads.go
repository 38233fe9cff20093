package chaos

import (
	"fmt"
	"sort"
)

// isRead reports whether k reads rows: by id (Get, GetMany) or by slug
// (GetBy).
func isRead(k Kind) bool { return k == OpGet || k == OpGetMany || k == OpGetBy }

// isWrite reports whether k writes a row.
func isWrite(k Kind) bool {
	return k == OpCreate || k == OpUpdate || k == OpPut || k == OpDelete
}

// checkReads finds reads older than the newest write that completed
// before they began, per key. Writes of a key are serialised, so version
// order is the order they happened in. A read of version x is fine when x
// is at least the version of the newest write that returned nil before the
// read began; a read of "absent" is fine when that write was a delete, or
// a later delete had begun before the read ended. A write that returned an
// error binds no read. A version no write could have produced is a
// violation too.
func checkReads(ops []Op) (reads int, vs []Violation) {
	writes := map[int64][]*Op{} // per key, by version
	for i := range ops {
		if op := &ops[i]; isWrite(op.Kind) {
			writes[op.Keys[0]] = append(writes[op.Keys[0]], op)
		}
	}
	for _, ws := range writes {
		sort.Slice(ws, func(i, j int) bool { return ws[i].Versions[0] < ws[j].Versions[0] })
	}
	for i := range ops {
		op := &ops[i]
		if !isRead(op.Kind) || op.Err != "" {
			continue
		}
		reads++
		for k, key := range op.Keys {
			if v := checkRead(op, key, op.Versions[k], writes[key]); v != nil {
				vs = append(vs, *v)
			}
		}
	}
	return reads, vs
}

func checkRead(r *Op, key, got int64, ws []*Op) *Violation {
	// Writes of a key are serialised, so their ends grow with their
	// versions: the newest write that ended before r began is found by
	// binary search, and the one that completed (returned nil) before it.
	n := sort.Search(len(ws), func(i int) bool { return ws[i].End >= r.Start })
	ri := n - 1
	for ri >= 0 && ws[ri].Applied != Yes {
		ri--
	}
	var req *Op
	if ri >= 0 {
		req = ws[ri]
	}
	bad := func(msg string, with *Op) *Violation {
		v := &Violation{Check: "reads", Key: key, At: r.Start, Msg: msg, Ops: []int{r.ID}}
		if with != nil {
			v.Ops = append(v.Ops, with.ID)
		}
		return v
	}
	if got != Absent {
		i := sort.Search(len(ws), func(i int) bool { return ws[i].Versions[0] >= got })
		if i == len(ws) || ws[i].Versions[0] != got || ws[i].Kind == OpDelete || ws[i].Applied == No || ws[i].Start >= r.End {
			return bad(fmt.Sprintf("proc %d read version %d of key %d, which no write could have produced", r.Proc, got, key), nil)
		}
		if req != nil && got < req.Versions[0] {
			return bad(fmt.Sprintf("proc %d read version %d of key %d at %v, but %s of version %d by proc %d completed at %v, before the read began",
				r.Proc, got, key, r.Start, req.Kind, req.Versions[0], req.Proc, req.End), req)
		}
		return nil
	}
	if req == nil || req.Kind == OpDelete {
		return nil
	}
	for _, w := range ws[ri+1:] {
		if w.Start >= r.End {
			break
		}
		if w.Kind == OpDelete && w.Applied != No {
			return nil
		}
	}
	return bad(fmt.Sprintf("proc %d found key %d absent at %v, but %s of version %d by proc %d completed at %v, before the read began, and no delete followed",
		r.Proc, key, r.Start, req.Kind, req.Versions[0], req.Proc, req.End), req)
}
