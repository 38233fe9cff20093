package main

import (
	"bytes"
	"encoding/json"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun_demo runs what `make demo` runs (every scenario on the embedded
// backend, report and charts written), with fewer callers per process and
// the smallest sizes (smallest, in TestMain), and checks
// that each scenario finished and that asidekit's variants did their work
// there: loads, and the query scenario's writes through the repository
// (its cache upkeep after each commit runs write.lua and the list
// generation scripts on miniredis's gopher-lua). No asidekit log line may
// report a failed cache upkeep, and the summary names the report.
func TestRun_demo(t *testing.T) {
	var logs bytes.Buffer // slog's default handler writes through log
	log.SetOutput(&logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	dir := t.TempDir()
	file := filepath.Join(dir, "results.json")
	var out, errb bytes.Buffer
	args := []string{"-embedded", "-quick", "-progress", "never", "-instances", "2", "-goroutines", "2", "-json", file, "-out", dir, "all"}
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("run = %d; stderr:\n%s", code, errb.String())
	}
	t.Log(out.String())
	if strings.Contains(errb.String(), "warning") {
		t.Errorf("stderr has a warning:\n%s", errb.String())
	}
	if s := logs.String(); strings.Contains(s, "failed") || strings.Contains(s, "ERR") {
		t.Errorf("asidekit logged a failure:\n%s", s)
	}
	for _, want := range []string{"== summary: what each protection saved", "report and charts written to " + dir} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.md")); err != nil {
		t.Error(err)
	}

	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var results []struct {
		Scenario string
		Results  []map[string]any
		Notes    []string
	}
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]map[string]any{} // scenario → variant → metrics
	for _, r := range results {
		got[r.Scenario] = map[string]map[string]any{}
		for _, row := range r.Results {
			got[r.Scenario][row["variant"].(string)] = row
		}
	}
	if len(results) != len(scenarioNames) {
		t.Fatalf("%d results, want one per scenario (%d)", len(results), len(scenarioNames))
	}
	metric := func(scenario, variant, name string) float64 {
		t.Helper()
		v, ok := got[scenario][variant][name].(float64)
		if !ok {
			t.Fatalf("%s %s: no %s in %v", scenario, variant, name, got[scenario][variant])
		}
		return v
	}
	positive := func(scenario, variant, name string) {
		t.Helper()
		if v := metric(scenario, variant, name); v <= 0 {
			t.Errorf("%s %s: %s = %v, want > 0", scenario, variant, name, v)
		}
	}
	zero := func(scenario, variant, name string) {
		t.Helper()
		if v := metric(scenario, variant, name); v != 0 {
			t.Errorf("%s %s: %s = %v, want 0", scenario, variant, name, v)
		}
	}

	zero("hit", "asidekit/200B", "errors")
	positive("penetration", "none", "db_loads")
	positive("penetration", "null_cache", "db_loads") // one per absent id
	for _, v := range []string{"none", "null_cache", "bloom", "bloom_null"} {
		zero("penetration", v, "errors")
		if v != "none" && metric("penetration", v, "db_loads") >= metric("penetration", "none", "db_loads") {
			t.Errorf("penetration: %s made as many DB loads as none: nothing saved", v)
		}
	}
	for _, v := range []string{"no_jitter", "jitter"} {
		positive("avalanche", v, "db_loads")
		zero("avalanche", v, "errors")
	}
	for _, v := range []string{"none", "singleflight", "mutex", "async_refresh", "early_refresh"} {
		positive("breakdown", v, "db_loads")
		zero("breakdown", v, "errors")
	}
	if n, m := metric("breakdown", "none", "db_loads"), metric("breakdown", "mutex", "db_loads"); m >= n {
		t.Errorf("breakdown: mutex made %v DB loads, none %v: nothing saved", m, n)
	}
	for _, v := range []string{"seqgen", "seqgen_nextn", "seqgen_keys_lost"} {
		positive("seqgen", v, "db_loads")
		zero("seqgen", v, "errors")
		zero("seqgen", v, "duplicates")
	}
	for _, v := range []string{"sql", "ttl_lists", "asidekit"} {
		positive("query", v, "list_reads")
		positive("query", v, "writes")
	}
	zero("query", "asidekit", "stale_list_reads")
	if s, a := metric("query", "sql", "db_queries_per_list_read"), metric("query", "asidekit", "db_queries_per_list_read"); a >= s {
		t.Errorf("query: asidekit ran %v SQL statements per list read, sql %v: nothing saved", a, s)
	}
	// The scenarios that need a real server are skipped with a note.
	for _, s := range []string{"outofband", "local_invalidation", "skew", "outage", "replica"} {
		if len(got[s]) != 0 {
			t.Errorf("%s ran on the embedded backend: %v", s, got[s])
		}
	}
}
