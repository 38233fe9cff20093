package benchmarks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Chart file names WriteReport creates.
const (
	AvalancheChart = "avalanche.png"
	// CacheDownChart holds the avalanche variants with an outage, whose
	// scale would flatten the others.
	CacheDownChart = "avalanche_cache_down.png"
	BreakdownChart = "breakdown.png"
)

// WriteReport writes dir/report.md: for each result its table and notes,
// and PNG charts next to it: DB loads per 100 ms over time for avalanche
// (every variant on one plot) and latency percentiles per variant for
// breakdown. command is quoted at the top, as the way to reproduce it.
// dir is created if needed.
func WriteReport(dir string, results []Result, command string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("# asidebench report\n\n")
	fmt.Fprintf(&b, "Generated %s", time.Now().UTC().Format(time.RFC3339))
	if command != "" {
		fmt.Fprintf(&b, " by:\n\n```sh\n%s\n```\n", command)
	}
	b.WriteString("\n")
	if len(results) > 0 {
		fmt.Fprintf(&b, "Backend: **%s**.\n\n", results[0].Conditions())
		if strings.Contains(results[0].Backend, "in-process") {
			b.WriteString("> The embedded backend (miniredis and/or SQLite in the benchmark's own process) " +
				"shows the counts faithfully, but its latencies and throughput are not representative " +
				"of a real Redis and PostgreSQL.\n\n")
		}
	}
	for _, res := range results {
		fmt.Fprintf(&b, "## %s\n\n", res.Scenario)
		markdownTable(&b, res)
		b.WriteString("\n")
		for _, r := range res.Rows {
			if r.Notes != "" {
				fmt.Fprintf(&b, "- `%s`: %s\n", r.Variant, r.Notes)
			}
		}
		for _, n := range res.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
		switch res.Scenario {
		case "avalanche":
			if err := avalanchePlot(filepath.Join(dir, AvalancheChart), "avalanche: DB loads per 100 ms", res, false); err != nil {
				return err
			}
			fmt.Fprintf(&b, "![DB loads per 100 ms](%s)\n\n", AvalancheChart)
			if hasOutage(res) {
				if err := avalanchePlot(filepath.Join(dir, CacheDownChart), "avalanche with Redis cut off: DB loads per 100 ms", res, true); err != nil {
					return err
				}
				fmt.Fprintf(&b, "![DB loads per 100 ms with Redis cut off](%s)\n\n", CacheDownChart)
			}
		case "breakdown":
			if err := breakdownPlot(filepath.Join(dir, BreakdownChart), res); err != nil {
				return err
			}
			fmt.Fprintf(&b, "![latency per variant](%s)\n\n", BreakdownChart)
		}
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(b.String()), 0o644)
}

// hasOutage reports whether res has a row with the outage metrics.
func hasOutage(res Result) bool {
	for _, r := range res.Rows {
		if _, ok := r.Get(MetricMaxInflight); ok {
			return true
		}
	}
	return false
}

// avalanchePlot draws DB loads per 100 ms over time, one line per variant:
// the outage variants (outage true) or the others.
func avalanchePlot(file, title string, res Result, outage bool) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "seconds since the keys were cached"
	p.Y.Label.Text = "DB loads / 100 ms"
	p.Legend.Top = true
	var args []any
	for _, r := range res.Rows {
		if _, down := r.Get(MetricMaxInflight); r.Timeline == nil || down != outage {
			continue
		}
		xy := make(plotter.XYs, len(r.Timeline))
		for i, n := range r.Timeline {
			xy[i].X = (float64(i) + 0.5) * bucketWidth.Seconds()
			xy[i].Y = float64(n)
		}
		args = append(args, r.Variant, xy)
	}
	if len(args) > 0 {
		if err := plotutil.AddLines(p, args...); err != nil {
			return err
		}
	}
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 4*vg.Inch, file)
}

// breakdownPlot draws latency percentiles per variant on a log scale.
func breakdownPlot(file string, res Result) error {
	p := plot.New()
	p.Title.Text = "breakdown: latency per variant"
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (ms, log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = true
	p.Legend.Left = true
	var ticks plot.ConstantTicks
	for i, q := range quantiles {
		label := fmt.Sprintf("p%g", q*100)
		if q == 1 {
			label = "max"
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	p.X.Tick.Marker = ticks
	var args []any
	for _, r := range res.Rows {
		if len(r.Percentiles) == 0 {
			continue
		}
		xy := make(plotter.XYs, len(r.Percentiles))
		for i, pc := range r.Percentiles {
			xy[i].X = float64(i)
			xy[i].Y = max(ms(pc.Latency), 0.001) // log scale: no zero
		}
		args = append(args, r.Variant, xy)
	}
	if len(args) > 0 {
		if err := plotutil.AddLinePoints(p, args...); err != nil {
			return err
		}
	}
	p.Add(plotter.NewGrid())
	return p.Save(8*vg.Inch, 4*vg.Inch, file)
}
