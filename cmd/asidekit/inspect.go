package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
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

// suspect is a disagreement waiting for its second look.
type suspect struct {
	finding
	col  string // a mapping's column, "" for a row
	raw  []byte
	seen time.Time
}

// runInspect samples an entity's cached entries (and its mappings') at a
// bounded rate of SQL reads, judges each as get and getby do, and counts a
// disagreement as a violation only when a second look, Grace later, finds
// the same entry (same version token and bytes) still disagreeing: an
// invalidation in flight is not reported.
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
	ctx := r.ctx
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(r.ctx, *dur)
		defer cancel()
	}
	rep := &inspectReport{Entity: e.Name, Violations: map[string]int{}}
	every := time.Duration(float64(time.Second) / *rate)
	next := time.Now()
	pace := func(ctx context.Context) error {
		if d := time.Until(next); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		next = time.Now().Add(every)
		return nil
	}
	// look judges one entry now.
	look := func(ctx context.Context, name, col, id string) (*suspect, error) {
		if err := pace(ctx); err != nil {
			return nil, err
		}
		c, err := r.peek(e, name, id)
		if err != nil {
			return nil, err
		}
		s := &suspect{finding: finding{Entity: name, ID: id, Key: c.Key, Version: c.Version}, col: col, raw: c.raw, seen: time.Now()}
		if col == "" {
			row, err := readRow(ctx, db, e, e.Key, id)
			if err != nil {
				return nil, err
			}
			j, err := judge(e, id, c, row)
			if err != nil || j.Agree {
				return nil, err
			}
			s.Kind, s.Verdict = j.Kind, j.Verdict
			return s, nil
		}
		row, err := readRow(ctx, db, e, col, id)
		if err != nil {
			return nil, err
		}
		if j := judgeMapping(e, col, id, c, row); !j.Agree {
			s.Kind, s.Verdict = kindMapping, j.Verdict
			return s, nil
		}
		return nil, nil
	}
	var suspects []*suspect
	p := &progress{w: r.stderr}
	names := []struct{ name, col string }{{e.Name, ""}}
	for _, col := range e.Unique {
		names = append(names, struct{ name, col string }{e.lookupName(col), col})
	}
walk:
	for _, n := range names {
		ent, err := r.b.entity(r.ctx, e, n.name)
		if err != nil {
			return err
		}
		var cur cacheaside.Cursor
		for !cur.Done() {
			var ids []string
			ids, cur, err = ent.SampleIDs(ctx, cur, 100)
			if ctx.Err() != nil {
				break walk
			}
			if err != nil {
				return unreachable("Redis", err)
			}
			for _, id := range ids {
				s, err := look(ctx, n.name, n.col, id)
				if ctx.Err() != nil {
					break walk
				}
				if err != nil {
					return err
				}
				rep.Inspected++
				if s != nil {
					suspects = append(suspects, s)
				}
				p.printf(false, "inspect %s: %d inspected, %d suspect(s)", e.Name, rep.Inspected, len(suspects))
				if *maxN > 0 && rep.Inspected >= *maxN {
					break walk
				}
			}
		}
	}
	if r.ctx.Err() != nil {
		return r.ctx.Err()
	}
	// Second looks, Grace after the first, on the command's own context
	// (-for bounds the sampling only).
	if len(suspects) > 0 {
		p.printf(true, "inspect %s: %d inspected; looking again at %d suspect(s) after %s", e.Name, rep.Inspected, len(suspects), *grace)
	}
	next = time.Now()
	for _, s := range suspects {
		if d := time.Until(s.seen.Add(*grace)); d > 0 {
			select {
			case <-time.After(d):
			case <-r.ctx.Done():
				return r.ctx.Err()
			}
		}
		again, err := look(r.ctx, s.Entity, s.col, s.ID)
		if err != nil {
			return err
		}
		if again == nil || again.Version != s.Version || !bytes.Equal(again.raw, s.raw) {
			continue // it changed: an invalidation landed, or a new load
		}
		rep.Violations[s.Kind]++
		rep.Found = append(rep.Found, s.finding)
	}
	violations := len(rep.Found)
	rep.Consistent = rep.Inspected - violations
	switch {
	case rep.Inspected == 0:
	case violations == 0:
		rep.Nines, rep.NinesAtLeast = math.Log10(float64(rep.Inspected)), true
	default:
		rep.Nines = 0 - math.Log10(float64(violations)/float64(rep.Inspected))
	}
	if *repair && violations > 0 {
		byEntity := map[string][]string{}
		for _, f := range rep.Found {
			byEntity[f.Entity] = append(byEntity[f.Entity], f.ID)
		}
		for name, ids := range byEntity {
			ent, err := r.b.entity(r.ctx, e, name)
			if err != nil {
				return err
			}
			if err := ent.Invalidate(r.ctx, ids...); err != nil {
				return invalidateErr(err)
			}
			rep.Repaired += len(ids)
		}
	}
	rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
	if err := r.output(rep, func(w io.Writer) { rep.print(w) }); err != nil {
		return err
	}
	if violations > 0 {
		return errProblem
	}
	return nil
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
