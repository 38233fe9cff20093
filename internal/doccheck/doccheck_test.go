package main

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestBlocks(t *testing.T) {
	md := "text\n\n" +
		"```sh\nmake demo   # a comment\ngo run ./x \\\n  -flag v\n```\n" +
		"```go\ngo run ./not/shell\n```\n" +
		"para\n    not a block: no blank line before\n\n" +
		"    cd a && go run ./b\n\n    make c\nafter\n" +
		"```console\n$ go test ./d\n```\n"
	bs, err := blocks("x.md", strings.NewReader(md))
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, b := range bs {
		var ls []string
		for _, l := range b.lines {
			ls = append(ls, l.text)
		}
		got = append(got, ls)
	}
	want := [][]string{
		{"make demo   # a comment", "go run ./x  -flag v"},
		{"cd a && go run ./b", "make c"},
		{"go test ./d"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blocks:\n got %q\nwant %q", got, want)
	}
	if bs[1].lines[1].n != 16 {
		t.Errorf("line of %q = %d, want 16", bs[1].lines[1].text, bs[1].lines[1].n)
	}
}

func TestParse(t *testing.T) {
	nodes, comment, err := parse(`A=1 B='x y' sh -c 'cd b && go run ./c -json "o.json"' & # or: make d`)
	if err != nil {
		t.Fatal(err)
	}
	want := []node{{assign: []string{"A=1", "B=x y"}, args: []string{"sh", "-c", `cd b && go run ./c -json "o.json"`}}}
	if !reflect.DeepEqual(nodes, want) || comment != "or: make d" {
		t.Errorf("parse = %q, %q; want %q, %q", nodes, comment, want, "or: make d")
	}
	nodes, _, err = parse(`(cd benchmarks && go run ./cmd/x -quick all)`)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || len(nodes[0].sub) != 2 || nodes[0].sub[1].args[1] != "run" {
		t.Errorf("subshell parsed as %q", nodes)
	}
	for _, bad := range []string{`go run ./x > out`, `go run ./x $(pwd)`, `(cd a`, `cd a)`, `echo 'open`} {
		if _, _, err := parse(bad); err == nil {
			t.Errorf("parse(%q): no error", bad)
		}
	}
}

func TestCheckArgs(t *testing.T) {
	usage := "usage: bench [flags] SCENARIO...\n\nSCENARIO: hit, breakdown or all\n\nflags:\n" +
		"  -json FILE\n    \twrite JSON to FILE\n  -quick\n    \tsmall sizes\n  -v\tverbose\n"
	for _, ok := range [][]string{
		{"-quick", "-json", "out.json", "all"},
		{"-json=o", "-v", "hit", "breakdown"},
		{"--quick", "--", "-not-a-flag"},
	} {
		if err := checkArgs("./bench", usage+"-not-a-flag", ok); err != nil {
			t.Errorf("checkArgs(%q): %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"-fast"}, {"avalanche"}, {"-json", "x", "hi"}} {
		if err := checkArgs("./bench", usage, bad); err == nil {
			t.Errorf("checkArgs(%q): no error", bad)
		}
	}
}

func TestInvocation(t *testing.T) {
	for s, want := range map[string]bool{
		"make demo":                            true,
		"(cd benchmarks && go run ./cmd/x)":    true,
		"sh -c 'go test ./x'":                  true,
		"curl localhost:8080/metrics":          false,
		"repo: namespace collision: make sure": true,
		"go vet ./...":                         false,
		"gomake":                               false,
	} {
		if got := invocation.MatchString(s); got != want {
			t.Errorf("invocation(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestDefaultFiles(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"docs/b.md", "docs/a.md", "docs/notes.txt", "docs/sub/c.md", "other/d.md"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := defaultFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"README.md", "OPERATIONS.md", "COMPARISON.md", "docs/a.md", "docs/b.md"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("defaultFiles = %q, want %q", got, want)
	}

	if _, err := defaultFiles(t.TempDir()); err == nil {
		t.Error("defaultFiles of a root without docs/*.md: no error")
	}
}

// TestDefaultFiles_repository checks the repository's own pages are among
// the defaults, so that CI's plain `go run ./internal/doccheck` reads them.
func TestDefaultFiles_repository(t *testing.T) {
	got, err := defaultFiles(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"README.md", "docs/testing.md", "docs/benchmarks.md", "docs/command.md"} {
		if !slices.Contains(got, want) {
			t.Errorf("defaultFiles(repository) = %q, lacks %s", got, want)
		}
	}
}
