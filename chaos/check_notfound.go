package chaos

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
)

// notFound is the outcome of the not-found check, with the Bloom filters'
// counters of the run.
type notFound struct {
	reads        int // reads checked (Get, GetMany, GetBy that returned)
	afterRestart int // of which began after the cache Redis was first restarted
	restarts     int // restarts of the cache Redis
	faults       int // restarts that hit a read
	byID, bySlug int // wrong "not found"s by id (Get, GetMany), by slug (GetBy)
	unknown      int // of which on a row with a write of unknown outcome before the read
	vs           []Violation
	errs         counts // errors of the reads by kind
	blooms       bloomTally
}

// bloomTally sums the counters of the main run's Bloom filters over every
// process.
type bloomTally struct {
	filters             int
	untrustedChecks     int64 // keys answered "maybe" because their shard was untrusted
	autoRebuilds        int64 // automatic rebuilds run to the end
	autoRebuildFailures int64
	err                 error // the first Stats error
}

// checkNotFound finds the wrong "not found"s: a read (Get, GetMany, GetBy)
// that found a row absent although a Create or Put of it (the seed
// included) returned nil before the read began, and no Delete of it began
// after that write and before the read ended (whatever the Delete's
// outcome). A Bloom filter that lost its keys — the cache Redis restarted
// empty — and still answered "absent" gives exactly these. The reads check
// finds them too, among the stale reads; this one counts them by id and
// by slug, and tells those on a row with a write of unknown outcome before
// the read (a Create whose COMMIT reply was lost may have added no id to
// the filter): they are not excused.
func checkNotFound(ops []Op, faults []Fault) notFound {
	res := notFound{errs: counts{}}
	creates := map[int64][]*Op{} // that returned nil, by End
	deletes := map[int64][]*Op{} // all, by Start
	unknown := map[int64][]*Op{} // writes of unknown outcome, by End
	for i := range ops {
		op := &ops[i]
		if !isWrite(op.Kind) {
			continue
		}
		key := op.Keys[0]
		switch {
		case op.Kind == OpDelete:
			deletes[key] = append(deletes[key], op)
		case (op.Kind == OpCreate || op.Kind == OpPut) && op.Applied == Yes:
			creates[key] = append(creates[key], op)
		}
		if op.Applied == Maybe {
			unknown[key] = append(unknown[key], op)
		}
	}
	for _, m := range []map[int64][]*Op{creates, unknown} {
		for _, ws := range m {
			sort.Slice(ws, func(i, j int) bool { return ws[i].End < ws[j].End })
		}
	}
	for _, ws := range deletes {
		sort.Slice(ws, func(i, j int) bool { return ws[i].Start < ws[j].Start })
	}
	firstRestart := -1
	for i, f := range faults {
		if f.Kind == FaultRestart {
			res.restarts++
			if firstRestart < 0 || f.At < faults[firstRestart].At {
				firstRestart = i
			}
		}
	}
	for i := range ops {
		r := &ops[i]
		if !isRead(r.Kind) {
			continue
		}
		if r.Err != "" {
			res.errs[r.ErrKind]++
			continue
		}
		res.reads++
		if firstRestart >= 0 && r.Start >= faults[firstRestart].At {
			res.afterRestart++
		}
		for k, key := range r.Keys {
			if r.Versions[k] != Absent {
				continue
			}
			c := lastBefore(creates[key], r.Start)
			if c == nil || deletedSince(deletes[key], c, r) {
				continue
			}
			v := Violation{Check: "notfound", Key: key, At: r.Start, Ops: []int{r.ID, c.ID},
				Msg: fmt.Sprintf("proc %d's %s found key %d absent at %v, but %s of version %d by proc %d completed at %v, before the read began, and no delete of it began before the read ended",
					r.Proc, r.Kind, key, r.Start, c.Kind, c.Versions[0], c.Proc, c.End)}
			if u := lastBefore(unknown[key], r.Start); u != nil {
				res.unknown++
				v.Ops = append(v.Ops, u.ID)
				v.Msg += fmt.Sprintf(" (its %s of version %d by proc %d, at %v, had an unknown outcome: %s)", u.Kind, u.Versions[0], u.Proc, u.End, u.Err)
			}
			if r.Kind == OpGetBy {
				res.bySlug++
			} else {
				res.byID++
			}
			res.vs = append(res.vs, v)
		}
	}
	var restarts []Fault
	for _, f := range faults {
		if f.Kind == FaultRestart {
			restarts = append(restarts, f)
		}
	}
	res.faults = touched(restarts, ops, []Kind{OpGet, OpGetMany, OpGetBy}, LinkCache)
	return res
}

// lastBefore returns the last of ws (sorted by End) that ended before t,
// or nil.
func lastBefore(ws []*Op, t time.Duration) *Op {
	i := sort.Search(len(ws), func(i int) bool { return ws[i].End >= t })
	if i == 0 {
		return nil
	}
	return ws[i-1]
}

// deletedSince reports whether a delete (ds, sorted by Start) began after
// write c began and before read r ended.
func deletedSince(ds []*Op, c, r *Op) bool {
	for _, d := range ds {
		if d.Start > c.Start && d.Start < r.End {
			return true
		}
	}
	return false
}

// notFoundCheck runs the not-found check over the run's history, and sums the
// counters of every process's Bloom filters.
func (rn *run) notFoundCheck(ctx context.Context) notFound {
	res := checkNotFound(rn.hist.all(), rn.inj.faults())
	for _, p := range rn.procs {
		for _, r := range p.repos() {
			for _, f := range []*bloom.Filter{r.Filter(), r.FilterBy("slug")} {
				if f == nil {
					continue
				}
				st, err := f.Stats(ctx)
				if err != nil && res.blooms.err == nil {
					res.blooms.err = fmt.Errorf("%s: %w", r.Name(), err)
				}
				res.blooms.filters++
				res.blooms.untrustedChecks += st.UntrustedChecks
				res.blooms.autoRebuilds += st.AutoRebuilds
				res.blooms.autoRebuildFailures += st.AutoRebuildFailures
			}
		}
	}
	return res
}

// addNotFound adds the not-found check's row, violations and note.
func (r *Report) addNotFound(nf notFound) {
	r.Rows = append(r.Rows, Row{Check: "Redis restarted empty (Bloom)", Faults: nf.faults, Operations: nf.reads,
		Violations: len(nf.vs), Errors: nf.errs, Divergent: "-", Recovery: "-"})
	r.Violations = append(r.Violations, nf.vs...)
	b := nf.blooms
	note := fmt.Sprintf("Redis restarted empty (Bloom): %d restarts, %d reads (%d after the first restart); wrong not-found: %d by id, %d by slug, %d of them on a row with a write of unknown outcome before the read; %d filters: %d untrusted checks, %d automatic rebuilds, %d failed",
		nf.restarts, nf.reads, nf.afterRestart, nf.byID, nf.bySlug, nf.unknown, b.filters, b.untrustedChecks, b.autoRebuilds, b.autoRebuildFailures)
	if b.err != nil {
		note += "; filter stats: " + b.err.Error()
	}
	r.Notes = append(r.Notes, note)
	if len(nf.vs) > 0 && len(r.Violations) == len(nf.vs) {
		r.Notes = append(r.Notes, "first violation: "+nf.vs[0].Msg)
	}
}
