package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/inspect"
)

// inspectReport is the summary of inspect.
type inspectReport struct {
	Entity     string         `json:"entity"`
	Inspected  int            `json:"inspected"`
	Consistent int            `json:"consistent"`
	Violations map[string]int `json:"violations"`
	// Nines is -log10(violations / inspected): 3 means 99.9 % of the
	// inspected entries agreed. With no violation it is the lower bound
	// log10(inspected), and NinesAtLeast is true.
	Nines        float64   `json:"nines"`
	NinesAtLeast bool      `json:"nines_at_least,omitempty"`
	Found        []finding `json:"found,omitempty"`
	Repaired     int       `json:"repaired,omitempty"`
	Elapsed      string    `json:"elapsed"`
}

// finding is one violation: an entry that still disagreed with the
// database, unchanged, Grace after it was first seen.
type finding struct {
	Kind    string `json:"kind"`
	Entity  string `json:"entity"` // the rows' entity or a mapping's
	ID      string `json:"id"`
	Key     string `json:"key"`
	Version string `json:"version,omitempty"`
	Verdict string `json:"verdict"`
}

// runInspect samples an entity's cached entries (and its mappings') at a
// bounded rate of SQL reads, judges each as get and getby do, and counts a
// disagreement as a violation only when a second look, Grace later, finds
// the same entry (same version token and bytes) still disagreeing: an
// invalidation in flight is not reported. The walk is internal/inspect's,
// as repo's Inspect's is.
func runInspect(r *runner, args []string) error {
	fs := r.flags("inspect")
	rate := fs.Float64("rate", 50, "the most SQL reads per `N` second")
	dur := fs.Duration("for", 0, "sample for `D` (default: one walk of every cached entry)")
	maxN := fs.Int("max", 0, "judge at most `N` entries (default no limit)")
	grace := fs.Duration("grace", 5*time.Second, "how long a disagreement must last, unchanged, to count (above the CDC lag)")
	repair := fs.Bool("repair", false, "invalidate what it finds (needs -yes)")
	pos, err := r.parse(fs, args, "ENTITY [-rate N] [-for D] [-max N] [-grace D] [-repair]", 1, 1)
	if err != nil {
		return err
	}
	if *rate <= 0 || *dur < 0 || *maxN < 0 || *grace < 0 {
		return usageErr("inspect: -rate must be > 0; -for, -max and -grace >= 0")
	}
	e, err := r.entityArg(pos[0])
	if err != nil {
		return err
	}
	if *repair {
		if err := r.confirm("invalidate the violations found in " + e.Name); err != nil {
			return err
		}
	}
	db, err := r.b.DB(r.ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	p := &progress{w: r.stderr}
	run := inspect.New(inspect.Options{Rate: *rate, For: *dur, Max: *maxN, Grace: *grace, Repair: *repair,
		Progress: func(s inspect.Progress) {
			if s.Taken {
				p.printf(true, "inspect %s: %d inspected; looking again at %d suspect(s) after %s", e.Name, s.Inspected+int64(s.Pending), s.Pending, *grace)
				return
			}
			p.printf(false, "inspect %s: %d inspected, %d suspect(s)", e.Name, s.Inspected+int64(s.Pending), s.Suspects)
		}})
	walks, err := r.inspectWalks(run, db, e)
	if err != nil {
		return err
	}
	res, err := run.Do(r.ctx, inspect.Chain(walks...)) // the rows, then each mapping
	switch {
	case err != nil:
		return err
	case res.RepairErr != nil:
		return invalidateErr(res.RepairErr)
	}
	rep := newInspectReport(e.Name, res, time.Since(start))
	if err := r.output(rep, func(w io.Writer) { rep.print(w) }); err != nil {
		return err
	}
	if res.Violations() > 0 {
		return errProblem
	}
	return nil
}

// inspectWalks are the walks of inspect: e's rows' entries and each
// unique column's mapping's, each entry judged by inspectLook and repaired
// by an invalidation.
func (r *runner) inspectWalks(run *inspect.Run, db *gorm.DB, e *EntityConfig) ([]inspect.Walk, error) {
	var walks []inspect.Walk
	for _, col := range append([]string{""}, e.Unique...) {
		name := e.Name
		if col != "" {
			name = e.lookupName(col)
		}
		ent, err := r.b.entity(r.ctx, e, name)
		if err != nil {
			return nil, err
		}
		var cur cacheaside.Cursor
		walks = append(walks, run.WalkEntries(inspect.Entries{
			Sample: func(ctx context.Context, n int) ([]string, bool, error) {
				ids, next, err := ent.SampleIDs(ctx, cur, n)
				if err != nil {
					return nil, false, unreachable("Redis", err)
				}
				cur = next
				return ids, cur.Done(), nil
			},
			Look:   r.inspectLook(run, db, e, name, col),
			Repair: func(ctx context.Context, id string) error { return ent.Invalidate(ctx, id) },
		}))
	}
	return walks, nil
}

// inspectKinds are get's kinds of disagreement as the inspector's.
var inspectKinds = map[string]inspect.Kind{kindStale: inspect.Stale, kindGhost: inspect.Ghost,
	kindFalseNotFound: inspect.FalseNotFound, kindCorrupt: inspect.Corrupt}

// inspectLook judges an entry of name (e's rows', or col's mapping's, col
// "" for the rows) as get and getby do: a peek and one SQL read, paced.
func (r *runner) inspectLook(run *inspect.Run, db *gorm.DB, e *EntityConfig, name, col string) inspect.LookFunc {
	return func(ctx context.Context, id string) (inspect.Look, error) {
		if err := run.Pace(ctx); err != nil {
			return inspect.Look{}, err
		}
		c, err := r.peek(e, name, id)
		if err != nil {
			return inspect.Look{}, err
		}
		lk := inspect.Look{Entity: name, ID: id, Entry: inspect.Entry{Key: c.Key, State: int(c.state), Version: c.Version, Raw: c.raw}}
		if col != "" {
			row, err := readRow(ctx, db, e, col, id)
			if err != nil {
				return lk, err
			}
			if j := judgeMapping(e, col, id, c, row); !j.Agree {
				lk.Kind, lk.Verdict = inspect.DivergentMapping, j.Verdict
			}
			return lk, nil
		}
		row, err := readRow(ctx, db, e, e.Key, id)
		if err != nil {
			return lk, err
		}
		j, err := judge(e, id, c, row)
		if err == nil && !j.Agree {
			lk.Kind, lk.Verdict = inspectKinds[j.Kind], j.Verdict
		}
		return lk, err
	}
}

// newInspectReport is the summary of res, a run of entity's.
func newInspectReport(entity string, res inspect.Report, elapsed time.Duration) *inspectReport {
	rep := &inspectReport{Entity: entity, Inspected: int(res.Inspected), Consistent: int(res.Consistent),
		Violations: map[string]int{}, Repaired: int(res.Repaired), Elapsed: elapsed.Round(time.Millisecond).String()}
	for _, k := range inspect.Kinds {
		if n := res.Of(k); n > 0 {
			rep.Violations[k.String()] = int(n)
		}
	}
	if res.Inspected > 0 {
		rep.Nines, rep.NinesAtLeast = res.Nines(), res.Violations() == 0
	}
	for _, f := range res.Found {
		rep.Found = append(rep.Found, finding{Kind: f.Kind.String(), Entity: f.Entity, ID: f.ID, Key: f.Entry.Key,
			Version: f.Entry.Version, Verdict: f.Verdict})
	}
	return rep
}

func (rep *inspectReport) print(w io.Writer) {
	fmt.Fprintf(w, "%-20s %s\n", "entity", rep.Entity)
	fmt.Fprintf(w, "%-20s %d\n", "inspected", rep.Inspected)
	fmt.Fprintf(w, "%-20s %d\n", "consistent", rep.Consistent)
	kinds := []string{kindStale, kindGhost, kindFalseNotFound, kindMapping, kindCorrupt}
	for _, k := range kinds {
		fmt.Fprintf(w, "%-20s %d\n", k, rep.Violations[k])
	}
	nines := "-"
	if rep.Inspected > 0 {
		nines = fmt.Sprintf("%.2f", rep.Nines)
		if rep.NinesAtLeast {
			nines = ">= " + nines
		}
	}
	fmt.Fprintf(w, "%-20s %s\n", "nines", nines)
	if rep.Repaired > 0 {
		fmt.Fprintf(w, "%-20s %d\n", "repaired", rep.Repaired)
	}
	fmt.Fprintf(w, "%-20s %s\n", "elapsed", rep.Elapsed)
	found := append([]finding(nil), rep.Found...)
	sort.Slice(found, func(i, j int) bool { return found[i].Key < found[j].Key })
	for _, f := range found {
		fmt.Fprintf(w, "%s %s (version %s): %s\n", f.Kind, f.Key, f.Version, f.Verdict)
	}
}
