package benchmarks

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable prints res as an aligned table: one line per variant, one
// column per metric (in first-seen order), then the notes.
func WriteTable(w io.Writer, res Result) error {
	fmt.Fprintf(w, "== %s  [%s]\n", res.Scenario, res.Conditions())
	cols := columns(res.Rows)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "variant\t")
	for _, c := range cols {
		fmt.Fprint(tw, c, "\t")
	}
	fmt.Fprintln(tw)
	for _, r := range res.Rows {
		fmt.Fprint(tw, r.Variant, "\t")
		for _, c := range cols {
			if v, ok := r.Get(c); ok {
				fmt.Fprint(tw, formatNumber(v), "\t")
			} else {
				fmt.Fprint(tw, "-\t")
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range res.Rows {
		if r.Notes != "" {
			fmt.Fprintf(w, "  %-18s %s\n", r.Variant+":", r.Notes)
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintln(w, "  note:", n)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// columns returns every metric name of rows, in first-seen order.
func columns(rows []Row) []string {
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
// significant decimals at most.
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

// WriteJSON writes results as a JSON array of
// {"scenario", "backend", "params", "results": [{"variant", metrics...}]}
// objects, indented.
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// WriteMarkdownTable writes the rows of res as one Markdown table, numbers
// formatted as WriteTable prints them.
func WriteMarkdownTable(w io.Writer, res Result) error {
	var b strings.Builder
	markdownTable(&b, res)
	_, err := io.WriteString(w, b.String())
	return err
}

// markdownTable writes res as a Markdown table.
func markdownTable(b *strings.Builder, res Result) {
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
}
