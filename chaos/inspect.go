package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/repo"
)

// inspectOptions bound the inspection at the end of a run: the run is
// quiescent then, so a short Grace; a high Rate and a bounded For, so that
// it ends fast.
func (rn *run) inspectOptions() repo.InspectOptions {
	return repo.InspectOptions{
		Rate:   2000,
		For:    20 * time.Second,
		Grace:  100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(rn.cfg.Log, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// inspection is the result of running repo's Inspect on every repository
// of one process once the converge check is done.
type inspection struct {
	stats repo.InspectStats // summed over the repositories
	ids   []int64           // the keys of the violations found, sorted
	err   error             // the first error of an Inspect call
	// foreign counts the filter misses left out: ids of rows written
	// through another repository (see owns).
	foreign int
}

// owns reports whether the i-th repository of process.repos writes row
// id. Every repository reads the whole table, and its filter's rebuilds
// scan it all, but its filter learns only the writes made through it: a
// row of another strategy deleted and created again after the last
// rebuild is absent from it, which says nothing of the library (a service
// has one repository per table).
func owns(i int, id int64) bool {
	if i < len(strategies) {
		return id < 9000 && strategyOf(id) == i
	}
	return id == hotID(i-len(strategies))
}

// inspect runs Inspect on every repository of the first process (they
// share the cache and the table with the others, so it sees every cached
// entry), one after the other.
func (rn *run) inspect(ctx context.Context) inspection {
	var in inspection
	p := rn.procs[0]
	seen := map[int64]bool{}
	for i, r := range p.repos() {
		rep, err := r.Inspect(ctx, rn.inspectOptions())
		if err != nil && in.err == nil {
			in.err = fmt.Errorf("%s: %w", rep.Entity, err)
		}
		s := &in.stats
		s.Runs++
		s.Inspected += rep.Inspected
		s.Consistent += rep.Consistent
		s.Stale += rep.Stale
		s.Ghost += rep.Ghost
		s.FalseNotFound += rep.FalseNotFound
		s.DivergentMapping += rep.DivergentMapping
		s.Suspects += rep.Suspects
		s.Skipped += rep.Skipped
		for _, v := range rep.Found {
			id, err := strconv.ParseInt(v.ID, 10, 64)
			if err != nil { // a mapping's violation names the slug
				id, err = idOfSlug(v.ID)
			}
			if err != nil && in.err == nil {
				in.err = fmt.Errorf("%s: violation of id %q: %w", rep.Entity, v.ID, err)
			}
			if err == nil && v.Kind == repo.FalseNotFound && v.Key == "" && !owns(i, id) {
				in.foreign++
				s.FalseNotFound--
				s.Consistent++
				continue
			}
			if err == nil && !seen[id] {
				seen[id] = true
				in.ids = append(in.ids, id)
			}
		}
	}
	sort.Slice(in.ids, func(i, j int) bool { return in.ids[i] < in.ids[j] })
	return in
}

// disagree returns the keys where the inspector's verdict and the converge
// check's differ: divergent for one and not reported by the other. The
// converge check judges the rows of the repository workload only, so a
// violation the inspector finds on a hot row disagrees too (after
// quiescence every cached entry must match the table).
func disagree(divergent, reported []int64) []int64 {
	in := map[int64]int{}
	for _, id := range divergent {
		in[id] |= 1
	}
	for _, id := range reported {
		in[id] |= 2
	}
	var out []int64
	for id, m := range in {
		if m != 3 {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// note summarises the inspector's counts for the report.
func (in inspection) note() string {
	s := in.stats
	return fmt.Sprintf("inspector: %d repositories, %d inspected, %d consistent, %d suspects, %d skipped; violations: %d stale, %d ghost, %d false not-found, %d divergent mapping; %.1f nines; keys %s; %d filter misses of rows written through another repository left out",
		s.Runs, s.Inspected, s.Consistent, s.Suspects, s.Skipped, s.Stale, s.Ghost, s.FalseNotFound, s.DivergentMapping, s.Nines(), keyList(in.ids), in.foreign)
}
