package peers

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/asidekit/asidekit/benchmarks"
)

// WriteMarkdown writes results as Markdown, ready to paste into
// COMPARISON.md: for each scenario a heading, its parameters, a table
// (numbers formatted as benchmarks.WriteTable prints them) and the notes.
func WriteMarkdown(w io.Writer, results []benchmarks.Result) error {
	var b strings.Builder
	for _, res := range results {
		fmt.Fprintf(&b, "### %s\n\n", res.Scenario)
		if m, ok := res.Params.(map[string]any); ok && len(m) > 0 {
			b.WriteString("Parameters: ")
			b.WriteString(formatParams(m))
			b.WriteString("\n\n")
		}
		cols := columns(res.Rows)
		b.WriteString("| variant |")
		for _, c := range cols {
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n|---|")
		for range cols {
			b.WriteString("---:|")
		}
		b.WriteString("\n")
		for _, r := range res.Rows {
			b.WriteString("| " + r.Variant + " |")
			for _, c := range cols {
				s := "-"
				if v, ok := r.Get(c); ok {
					s = formatNumber(v)
				}
				b.WriteString(" " + s + " |")
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
		for _, r := range res.Rows {
			if r.Notes != "" {
				fmt.Fprintf(&b, "- **%s**: %s\n", r.Variant, r.Notes)
			}
		}
		for _, n := range res.Notes {
			fmt.Fprintf(&b, "- note: %s\n", n)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatParams prints a params map as "k=v, …" in sorted key order.
func formatParams(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%v", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// columns returns every metric name of rows, in first-seen order.
func columns(rows []benchmarks.Row) []string {
	var cols []string
	seen := map[string]bool{}
	for _, r := range rows {
		for _, m := range r.Metrics {
			if !seen[m.Name] {
				seen[m.Name] = true
				cols = append(cols, m.Name)
			}
		}
	}
	return cols
}

// formatNumber prints integers as such and other values with 3
// significant decimals at most, like benchmarks.WriteTable.
func formatNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatInt(int64(v), 10)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}
