package peers

import (
	"fmt"
	"io"
	"slices"
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
		if err := benchmarks.WriteMarkdownTable(&b, res); err != nil {
			return err
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
