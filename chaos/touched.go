package chaos

import "sort"

// links returns the links a fault hit: the servers it made fail for the
// operations that use them.
func (f Fault) links() []Link {
	switch f.Kind {
	case FaultRestart:
		return []Link{LinkCache}
	case FaultKill:
		return []Link{LinkPG}
	case FaultIsolate:
		return []Link{LinkCache, LinkPG}
	}
	return []Link{f.Link}
}

// touched counts the faults that hit one of links while at least one
// operation of kinds that used it ran (an operation of the process whose
// link failed, any operation for a server fault): the faults a check was
// exercised under.
func touched(faults []Fault, ops []Op, kinds []Kind, links ...Link) int {
	byProc := map[int]*timeline{-1: {}}
	for _, op := range ops {
		for _, k := range kinds {
			if op.Kind == k {
				if byProc[op.Proc] == nil {
					byProc[op.Proc] = &timeline{}
				}
				byProc[op.Proc].ops = append(byProc[op.Proc].ops, op)
				byProc[-1].ops = append(byProc[-1].ops, op)
				break
			}
		}
	}
	for _, t := range byProc {
		t.sort()
	}
	n := 0
	for _, f := range faults {
		if t := byProc[f.Proc]; t != nil && hits(f.links(), links) && t.overlaps(f) {
			n++
		}
	}
	return n
}

// timeline is a set of operations sorted by start, with the latest end
// among each prefix.
type timeline struct {
	ops    []Op
	maxEnd []int64
}

func (t *timeline) sort() {
	sort.Slice(t.ops, func(i, j int) bool { return t.ops[i].Start < t.ops[j].Start })
	t.maxEnd = make([]int64, len(t.ops))
	for i, op := range t.ops {
		t.maxEnd[i] = int64(op.End)
		if i > 0 && t.maxEnd[i-1] > t.maxEnd[i] {
			t.maxEnd[i] = t.maxEnd[i-1]
		}
	}
}

// overlaps reports whether an operation ran during f: one that began by
// the fault's end and was still running when it began.
func (t *timeline) overlaps(f Fault) bool {
	i := sort.Search(len(t.ops), func(i int) bool { return t.ops[i].Start > f.At+f.Dur })
	return i > 0 && t.maxEnd[i-1] >= int64(f.At)
}

func hits(a, b []Link) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}
