package benchmarks

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// A saving compares, in one scenario, the variant without a protection
// (the baseline) with each variant that has one, on the metric that shows
// what the protection is for.
type saving struct {
	scenario, metric, baseline string
	protected                  []string
}

// savings are the summary's comparisons: penetration counts the DB loads
// of absent ids, avalanche the highest DB loads in 100 ms (jitter spreads
// the reloads out, it does not avoid them), breakdown the loads per expiry
// of the hot key, query the SQL statements per list read, seqgen the SQL
// statements per run of ids.
var savings = []saving{
	{"penetration", MetricDBLoads, "none", []string{"null_cache", "bloom", "bloom_null"}},
	{"avalanche", MetricPeakPer100ms, "no_jitter", []string{"jitter"}},
	{"breakdown", MetricDBLoadsPerExpiry, "none", []string{"singleflight", "mutex", "async_refresh", "early_refresh"}},
	{"seqgen", MetricDBLoads, "nextval", []string{"seqgen", "seqgen_nextn"}},
	{"query", MetricDBQueriesPerListRead, "sql", []string{"ttl_lists", "asidekit", "asidekit_cdc"}},
}

// WriteSummary prints one table for a whole run: for each scenario, what
// each protection saved (the metric with and without it, and the share
// saved), and how long the scenario took (Result.Elapsed). A scenario with
// nothing to compare (hit, one skipped on this backend) gets one line
// saying why.
func WriteSummary(w io.Writer, results []Result) error {
	fmt.Fprintln(w, "== summary: what each protection saved")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\ttime\tprotection\tvs\tmetric\twithout\twith\tsaved\t")
	var others []string // the scenarios with nothing to compare, under the table
	for _, res := range results {
		took := "-"
		if res.Elapsed > 0 {
			took = res.Elapsed.Round(100 * time.Millisecond).String()
		}
		lines := savingLines(res)
		if len(lines) == 0 {
			others = append(others, fmt.Sprintf("  %s (%s): %s", res.Scenario, took, summaryNote(res)))
			continue
		}
		for i, l := range lines {
			name := res.Scenario
			if i > 0 {
				name, took = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, took, l[0], l[1], l[2], l[3], l[4], l[5])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range others {
		if _, err := fmt.Fprintln(w, o); err != nil {
			return err
		}
	}
	return nil
}

// savingLines returns res's comparisons as {protection, baseline, metric,
// without, with, saved}, for the variants res has.
func savingLines(res Result) [][6]string {
	var out [][6]string
	for _, s := range savings {
		if s.scenario != res.Scenario {
			continue
		}
		base := res.Row(s.baseline)
		if base == nil {
			return nil
		}
		without, ok := base.Get(s.metric)
		if !ok {
			return nil
		}
		for _, name := range s.protected {
			r := res.Row(name)
			if r == nil {
				continue
			}
			with, ok := r.Get(s.metric)
			if !ok {
				continue
			}
			out = append(out, [6]string{name, s.baseline, s.metric, formatNumber(without), formatNumber(with), savedShare(without, with)})
		}
	}
	return out
}

// savedShare is 1 − with/without as a percentage ("-" when without is 0).
func savedShare(without, with float64) string {
	if without <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*(1-with/without))
}

// summaryNote says why res has no comparison: its first note when it
// was skipped, else what it measures.
func summaryNote(res Result) string {
	if len(res.Rows) == 0 && len(res.Notes) > 0 {
		return res.Notes[0]
	}
	if res.Scenario == "hit" {
		return "the cost of a cache hit (no DB work): see its table"
	}
	return "no protection to compare: see its table"
}
