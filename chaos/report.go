package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one line of the report's table.
type Row struct {
	Check string `json:"check"`
	// Faults counts the faults that hit the links the check's operations
	// use, while one of them ran (see touched).
	Faults     int    `json:"faults"`
	Operations int    `json:"operations"`
	Violations int    `json:"violations"`
	Errors     counts `json:"errors"`
	Divergent  string `json:"divergent_keys"`
	Recovery   string `json:"recovery_time"`
}

// Report is the outcome of a run.
type Report struct {
	Seed        uint64      `json:"seed"`
	Config      Config      `json:"-"`
	Faults      []Fault     `json:"faults"`
	Rows        []Row       `json:"rows"`
	Violations  []Violation `json:"violations"`
	Notes       []string    `json:"notes"`
	FailureFile string      `json:"failure_file,omitempty"`
}

// Failed reports whether any check found a violation.
func (r *Report) Failed() bool { return len(r.Violations) > 0 }

// check runs every checker over the history.
func (rn *run) check(conv convergence, insp inspection, rounds []loadRound, marks map[string]int64) *Report {
	ops := rn.hist.all()
	faults := rn.inj.faults()
	rep := &Report{Seed: rn.cfg.Seed, Config: rn.cfg, Faults: faults}
	errs := func(kinds ...Kind) counts {
		c := counts{}
		for _, op := range ops {
			for _, k := range kinds {
				if op.Kind == k && op.ErrKind != "" {
					c[op.ErrKind]++
				}
			}
		}
		return c
	}
	repoOps := []Kind{OpGet, OpGetMany, OpGetBy, OpCreate, OpUpdate, OpPut, OpDelete}
	add := func(check string, n int, vs []Violation, c counts, kinds []Kind, links ...Link) *Row {
		rep.Rows = append(rep.Rows, Row{Check: check, Faults: touched(faults, ops, kinds, links...), Operations: n,
			Violations: len(vs), Errors: c, Divergent: "-", Recovery: "-"})
		rep.Violations = append(rep.Violations, vs...)
		return &rep.Rows[len(rep.Rows)-1]
	}

	reads, vs := checkReads(ops)
	add("reads (no stale read)", reads, vs, errs(repoOps...), repoOps, LinkCache, LinkPG)

	var cvs []Violation
	for _, id := range conv.divergent {
		cvs = append(cvs, Violation{Check: "converge", Key: id, At: rn.clk.now(), Msg: fmt.Sprintf("key %d: the cache differs from the table after quiescence", id)})
	}
	row := add("converge (cache = table)", conv.keys, cvs, counts{}, repoOps, LinkCache, LinkPG)
	row.Divergent = keyList(conv.divergent)
	row.Recovery = conv.recovery.Round(time.Millisecond).String()
	if conv.err != nil {
		row.Errors["check"]++
		rep.Notes = append(rep.Notes, "converge: "+conv.err.Error())
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("converge: %d keys whose last write's outcome was unknown were invalidated first (repo/cdc's job)", conv.ambiguous))

	var ivs []Violation
	for _, id := range disagree(conv.divergent, insp.ids) {
		ivs = append(ivs, Violation{Check: "inspector", Key: id, At: rn.clk.now(),
			Msg: fmt.Sprintf("key %d: the inspector and the converge check disagree (divergent %v, reported by the inspector %v)",
				id, containsKey(conv.divergent, id), containsKey(insp.ids, id))})
	}
	row = add("inspector (agrees with converge)", int(insp.stats.Inspected), ivs, counts{}, repoOps, LinkCache, LinkPG)
	row.Divergent = keyList(insp.ids)
	if insp.err != nil {
		row.Errors["check"]++
		rep.Notes = append(rep.Notes, "inspector: "+insp.err.Error())
	}
	rep.Notes = append(rep.Notes, insp.note())

	holds, vs := checkLock(ops)
	add("lock (no overlapping fenced holders)", holds, vs, errs(OpHold), []Kind{OpHold, OpFenced}, LinkGuard, LinkPG)
	nf, vs, unknown := checkFenced(ops, time.Minute)
	add("lock fenced register (porcupine)", nf, vs, errs(OpFenced), []Kind{OpFenced}, LinkPG)
	if unknown {
		rep.Notes = append(rep.Notes, "porcupine: the fenced register check timed out (unknown)")
	}
	ns, vs := checkSerials(ops, marks)
	add("seqgen (unique, <= DB mark)", ns, vs, errs(OpSerial), []Kind{OpSerial}, LinkCache, LinkPG)
	nl, vs := checkLimiter(ops)
	add(fmt.Sprintf("limiter (<= %d per %v)", limitN, limitW), nl, vs, errs(OpAllow), []Kind{OpAllow}, LinkGuard)

	vs = checkLoads(rounds)
	add("loads per expiry", len(rounds), vs, counts{}, repoOps, LinkCache, LinkPG)
	rep.Notes = append(rep.Notes, "loads per expiry: "+loadSummary(rounds))

	no, vs, oerrs := checkOutage(ops, faults)
	add("outage (limiter, seqgen: own Redis down)", no, vs, oerrs, []Kind{OpAllow, OpSerial}, LinkGuard, LinkCache)

	nrec, healed, vs := checkRecovery(ops, faults)
	add("recovery (own ErrAfterCommit writes)", nrec, vs, errs(repoOps...), repoOps, LinkCache)
	rep.Notes = append(rep.Notes, fmt.Sprintf("recovery: %d reads checked against their process's own ErrAfterCommit write, %d of them after the heal of its cache Redis", nrec, healed))

	nlists, vs := checkLists(ops)
	add("lists (no stale list read)", nlists, vs, errs(OpList, OpListWrite), []Kind{OpList, OpListWrite}, LinkCache, LinkPG)

	if len(rep.Violations) > 0 {
		first := rep.Violations[0]
		rep.Notes = append(rep.Notes, "first violation: "+first.Msg)
	}
	return rep
}

func keyList(ids []int64) string {
	if len(ids) == 0 {
		return "0"
	}
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(ids)) + " (")
	for i, id := range ids {
		if i == 5 {
			b.WriteString(" …")
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(')')
	return b.String()
}

// loadSummary lists, per entity, the loads of each round.
func loadSummary(rounds []loadRound) string {
	per := map[string][]string{}
	var names []string
	for _, r := range rounds {
		if _, ok := per[r.Entity]; !ok {
			names = append(names, r.Entity)
		}
		per[r.Entity] = append(per[r.Entity], strconv.Itoa(r.Loads))
	}
	var parts []string
	for _, n := range names {
		parts = append(parts, n+" "+strings.Join(per[n], ","))
	}
	return strings.Join(parts, "; ")
}

// Print writes the table, the faults by kind and the notes.
func (r *Report) Print(w io.Writer) {
	kinds := counts{}
	for _, f := range r.Faults {
		kinds[string(f.Kind)]++
	}
	fmt.Fprintf(w, "seed %d; faults injected: %v\n\n", r.Seed, kinds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tfaults\toperations\tviolations\terrors by kind\tdivergent keys\trecovery time")
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%v\t%s\t%s\n", row.Check, row.Faults, row.Operations, row.Violations, row.Errors, row.Divergent, row.Recovery)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, n := range r.Notes {
		fmt.Fprintln(w, n)
	}
	if r.FailureFile != "" {
		fmt.Fprintf(w, "failing history: %s\nreplay: %s\n", r.FailureFile, replayCommand(r.Seed, r.Config))
	}
}

// replayCommand is the asidechaos command line that replays a run of cfg
// with seed.
func replayCommand(seed uint64, cfg Config) string {
	cmd := fmt.Sprintf("asidechaos -seed %d -duration %v -procs %d -goroutines %d -keys %d -rounds %d",
		seed, cfg.Duration, cfg.Procs, cfg.Goroutines, cfg.Keys, cfg.Rounds)
	if cfg.NoLists {
		cmd += " -lists=false"
	}
	return cmd
}

// failure is the file written for a failing run: the seed to replay it,
// the violations (at most 20), and for each the operations and faults in a
// window around it.
type failure struct {
	Seed       uint64          `json:"seed"`
	Replay     string          `json:"replay"`
	Violations []failureWindow `json:"violations"`
}

type failureWindow struct {
	Violation
	Window [2]time.Duration `json:"window"`
	Ops    []Op             `json:"ops"`
	Faults []Fault          `json:"faults"`
}

// window is how far around a violation its context reaches.
const window = 2 * time.Second

func (rn *run) writeFailure(rep *Report) (string, error) {
	runOps := rn.hist.all()
	f := failure{Seed: rep.Seed, Replay: replayCommand(rep.Seed, rn.cfg)}
	for i, v := range rep.Violations {
		if i == 20 {
			break
		}
		ops := runOps
		if phase, ok := rn.phaseOps[v.Check]; ok {
			ops = phase
		}
		fw := failureWindow{Violation: v, Window: [2]time.Duration{v.At - window, v.At + window}}
		involved := map[int]bool{}
		for _, id := range v.Ops {
			involved[id] = true
		}
		for _, op := range ops {
			near := op.End >= fw.Window[0] && op.Start <= fw.Window[1]
			sameKey := v.Key == 0 || (len(op.Keys) > 0 && containsKey(op.Keys, v.Key))
			if involved[op.ID] || (near && sameKey && (v.Key != 0 || op.Kind == kindOf(v.Check))) {
				fw.Ops = append(fw.Ops, op)
			}
		}
		sort.Slice(fw.Ops, func(i, j int) bool { return fw.Ops[i].Start < fw.Ops[j].Start })
		for _, ft := range rep.Faults {
			if ft.At <= fw.Window[1] && ft.At+ft.Dur >= fw.Window[0] {
				fw.Faults = append(fw.Faults, ft)
			}
		}
		f.Violations = append(f.Violations, fw)
	}
	if err := os.MkdirAll(rn.cfg.OutDir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(rn.cfg.OutDir, fmt.Sprintf("chaos-failure-%d.json", rep.Seed))
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, b, 0o644)
}

func containsKey(keys []int64, k int64) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}

// kindOf is the operation kind a keyless check is about.
func kindOf(check string) Kind {
	switch check {
	case "lock":
		return OpHold
	case "fenced":
		return OpFenced
	case "seqgen":
		return OpSerial
	case "limiter":
		return OpAllow
	}
	return OpGet
}
