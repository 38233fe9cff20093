// Command doccheck checks that the commands the documents show still run.
// It reads the shell code blocks of README.md, OPERATIONS.md,
// COMPARISON.md and every page of docs/ (fenced blocks marked sh, bash,
// shell or console or not marked at all, and indented blocks) and runs, for each line that calls
// go run, go test or make, its cheap form, from the repository root and as
// the line is written (its cd, its VAR=value, its sh -c):
//
//   - go run PKG ARGS…  →  go run PKG -h, and every flag in ARGS must be one
//     the program lists, every other argument a word of its usage text;
//   - go test PKGS…     →  go vet PKGS;
//   - make ARGS…        →  make -n ARGS.
//
// A comment "# or: COMMAND" is checked as a line of its own. Commands run
// with GOWORK unset, as a user's shell has it, whatever doccheck's own
// environment says (CI exports GOWORK=off). Each block starts at the root,
// and a cd or export carries over to the block's next lines, as in a shell.
//
// It prints each failing command, as the document writes it, with the cheap
// form that failed and its output, and exits 1 if any failed. From the
// repository root (CI runs it from .ci/run):
//
//	go run ./internal/doccheck [-v] [FILE.md…]
//
// With no FILE it checks README.md, OPERATIONS.md, COMPARISON.md and
// docs/*.md; it fails when docs/ has no page.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// invocation matches a line that calls go run, go test or make.
var invocation = regexp.MustCompile(`(^|[\s(;&|'"])(go\s+(run|test)|make)(\s|$|[)'";&|])`)

func main() {
	root := flag.String("C", ".", "the repository `DIR`, where the documents' commands start")
	verbose := flag.Bool("v", false, "print each cheap command as it runs")
	// Generous: a cold build of the peers module on a busy 2-core machine
	// has taken over 10 minutes; a command that fails fails fast anyway.
	timeout := flag.Duration("timeout", 25*time.Minute, "the longest one cheap command may take")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: doccheck [flags] [FILE.md…] (default %s %s)\n\nflags:\n", strings.Join(topFiles, " "), docsPages)
		flag.PrintDefaults()
	}
	flag.Parse()
	abs, err := filepath.Abs(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(2)
	}
	files := flag.Args()
	if len(files) == 0 {
		if files, err = defaultFiles(abs); err != nil {
			fmt.Fprintln(os.Stderr, "doccheck:", err)
			os.Exit(2)
		}
	}
	c := &checker{root: abs, baseEnv: userEnv(), timeout: *timeout, verbose: *verbose}
	os.Exit(c.main(files))
}

// userEnv is the environment less GOWORK: the documents' commands run as a
// user types them, in the workspace of the root go.work.
func userEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOWORK=") {
			env = append(env, kv)
		}
	}
	return env
}

// main checks files and returns the exit status.
func (c *checker) main(files []string) int {
	start := time.Now()
	checked, failed := 0, 0
	for _, name := range files {
		f, err := os.Open(filepath.Join(c.root, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "doccheck:", err)
			return 2
		}
		bs, err := blocks(name, f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "doccheck: %s: %v\n", name, err)
			return 2
		}
		for _, b := range bs {
			st := &state{dir: c.root}
			for _, l := range b.lines {
				n, err := c.line(st, l.text)
				checked += n
				if err != nil {
					failed++
					fmt.Fprintf(os.Stderr, "doccheck: %s:%d: %s\n%s\n", b.file, l.n, l.text, indent(err.Error()))
				}
			}
		}
	}
	fmt.Fprintf(os.Stderr, "doccheck: %d documented commands in %s, %d failed (%d cheap commands, %.1fs)\n",
		checked, strings.Join(files, " "), failed, c.ran, time.Since(start).Seconds())
	if failed > 0 {
		return 1
	}
	return 0
}

// line checks one line of a block and returns how many documented commands
// it holds (itself, and an alternative in an "or:" comment).
func (c *checker) line(st *state, text string) (int, error) {
	nodes, comment, err := parse(text)
	if err != nil {
		if invocation.MatchString(text) {
			return 1, fmt.Errorf("doccheck cannot read this line: %v", err)
		}
		return 0, nil // prose or output in a code block
	}
	n := 0
	if invocation.MatchString(strings.SplitN(text, "#", 2)[0]) {
		n++
	}
	if c.verbose && n > 0 {
		fmt.Fprintln(os.Stderr, "doccheck: "+text)
	}
	before := state{dir: st.dir, env: slices.Clip(st.env)}
	if err := c.run(st, nodes); err != nil {
		return max(n, 1), err
	}
	if alt, ok := strings.CutPrefix(comment, "or:"); ok && invocation.MatchString(alt) {
		altNodes, _, err := parse(alt)
		if err != nil {
			return n + 1, fmt.Errorf("# or: doccheck cannot read this command: %v", err)
		}
		if c.verbose {
			fmt.Fprintln(os.Stderr, "doccheck: "+strings.TrimSpace(alt))
		}
		alt := before
		if err := c.run(&alt, altNodes); err != nil {
			return n + 1, fmt.Errorf("# or:%s\n%v", comment[3:], err)
		}
		n++
	}
	return n, nil
}
