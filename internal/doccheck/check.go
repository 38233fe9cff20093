package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// state is what a shell carries from one command to the next: the working
// directory and the exported variables.
type state struct {
	dir string
	env []string // NAME=value, added to the check's own environment
}

func (s state) with(assign []string) state {
	s.env = append(slices.Clip(s.env), assign...)
	return s
}

// A checker runs the cheap form of documented commands.
type checker struct {
	root    string   // the repository root, where every block starts
	baseEnv []string // the environment of every command, before the block's own
	timeout time.Duration
	verbose bool
	ran     int               // cheap commands run
	done    map[string]result // by cacheKey, the cheap commands run so far
}

// checkFailure is a documented command whose cheap form failed.
type checkFailure struct {
	cheap  string // the command that was run, and where
	output string
	err    error
}

func (f *checkFailure) Error() string {
	msg := fmt.Sprintf("%s: %v", f.cheap, f.err)
	if out := strings.TrimSpace(f.output); out != "" {
		msg += "\n" + indent(tail(out, 30))
	}
	return msg
}

// run checks the commands of one line, starting in st; cd, export and
// assignments outside a subshell change st for the lines after it.
func (c *checker) run(st *state, nodes []node) error {
	for _, n := range nodes {
		if n.args == nil && n.sub == nil { // VAR=value alone
			st.env = append(st.env, n.assign...)
			continue
		}
		if n.sub != nil {
			sub := *st
			sub.env = slices.Clip(sub.env)
			if err := c.run(&sub, n.sub); err != nil {
				return err
			}
			continue
		}
		if err := c.command(st, n); err != nil {
			return err
		}
	}
	return nil
}

// command checks one simple command. Commands other than cd, export,
// sh -c, go run, go test and make are not run.
func (c *checker) command(st *state, n node) error {
	args := n.args
	switch {
	case args[0] == "cd":
		if len(args) != 2 {
			return fmt.Errorf("cd: want one directory, have %q", args[1:])
		}
		dir := filepath.Join(st.dir, args[1])
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return fmt.Errorf("cd %s: no such directory (in %s)", args[1], c.rel(st.dir))
		}
		st.dir = dir
	case args[0] == "export":
		for _, a := range args[1:] {
			if !isAssignment(a) {
				return fmt.Errorf("export %s: want NAME=value", a)
			}
		}
		st.env = append(st.env, args[1:]...)
	case (args[0] == "sh" || args[0] == "bash") && len(args) == 3 && args[1] == "-c":
		nodes, _, err := parse(args[2])
		if err != nil {
			return fmt.Errorf("%s -c: %v", args[0], err)
		}
		sub := st.with(n.assign)
		return c.run(&sub, nodes)
	case args[0] == "go" && len(args) > 1 && args[1] == "run":
		return c.goRun(st.with(n.assign), args[2:])
	case args[0] == "go" && len(args) > 1 && args[1] == "test":
		return c.goTest(st.with(n.assign), args[2:])
	case args[0] == "make":
		// make -n prints the recipes without running them: the targets and
		// the variables named must exist, and the Makefile must parse.
		_, err := c.exec(st.with(n.assign), "make", append([]string{"-n"}, args[1:]...)...)
		return err
	}
	return nil
}

// goBuildValueFlags are the build flags of go run and go test that take a
// value as the next word.
var goBuildValueFlags = []string{"C", "tags", "ldflags", "gcflags", "asmflags", "mod", "modfile",
	"overlay", "pgo", "exec", "p", "o", "toolexec", "buildmode", "compiler", "installsuffix", "pkgdir"}

// goTestValueFlags are go test's own flags that take a value.
var goTestValueFlags = []string{"run", "bench", "count", "timeout", "cpu", "benchtime", "coverprofile",
	"covermode", "coverpkg", "parallel", "shuffle", "skip", "list", "fuzz", "fuzztime", "fuzzminimizetime",
	"vet", "outputdir", "cpuprofile", "memprofile", "memprofilerate", "blockprofile", "blockprofilerate",
	"mutexprofile", "mutexprofilefraction", "trace", "json"}

// The go commands add -trimpath: it keeps the checkout's directory out of
// the build cache's keys, so that a fresh clone (CI's, in a new directory
// each run) reuses the packages an earlier clone built.

// goRun runs the program with -h instead of the documented arguments (so
// nothing is served, benchmarked or waited for), then checks that every
// flag the document passes is one the program lists, and every other
// argument (a scenario name, say) a word of its usage text.
func (c *checker) goRun(st state, args []string) error {
	var build []string
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		build = append(build, args[0])
		if takesValue(args[0], goBuildValueFlags) && len(args) > 1 {
			build = append(build, args[1])
			args = args[1:]
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return fmt.Errorf("go run: no package")
	}
	pkg, progArgs := args[0], args[1:]
	goArgs := append(append(append([]string{"run", "-trimpath"}, build...), pkg), "-h")
	usage, err := c.exec(st, "go", goArgs...)
	if err != nil {
		return err
	}
	return checkArgs(pkg, usage, progArgs)
}

// goTest vets the packages instead of testing them: they and their tests
// must compile, and no server is needed.
func (c *checker) goTest(st state, args []string) error {
	vetArgs := []string{"vet", "-trimpath"}
	var pkgs []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-args":
			i = len(args)
		case strings.HasPrefix(a, "-"):
			name := flagName(a)
			if name == "tags" || name == "C" || name == "mod" {
				vetArgs = append(vetArgs, a)
				if !strings.Contains(a, "=") && i+1 < len(args) {
					vetArgs = append(vetArgs, args[i+1])
				}
			}
			if takesValue(a, goBuildValueFlags) || takesValue(a, goTestValueFlags) {
				i++
			}
		default:
			pkgs = append(pkgs, a)
		}
	}
	if len(pkgs) == 0 {
		pkgs = []string{"."}
	}
	_, err := c.exec(st, "go", append(vetArgs, pkgs...)...)
	return err
}

// flagName returns the name of a flag word: "-json=x" → "json".
func flagName(a string) string {
	name := strings.TrimLeft(a, "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	return name
}

// takesValue reports whether the flag word a, one of names, takes the
// next word as its value.
func takesValue(a string, names []string) bool {
	return !strings.Contains(a, "=") && slices.Contains(names, flagName(a))
}

// usageFlag matches a flag in the output of the flag package's
// PrintDefaults: "  -json FILE" (with a value), "  -quick" or "  -v\t…".
var usageFlag = regexp.MustCompile(`(?m)^ {2}-([^\s=]+)( [^\s]+)?(\t.*)?$`)

// checkArgs checks a documented command's arguments against its usage text.
func checkArgs(pkg, usage string, args []string) error {
	flags := map[string]bool{} // name → takes a value
	for _, m := range usageFlag.FindAllStringSubmatch(usage, -1) {
		flags[m[1]] = m[2] != ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			args, i = args[i+1:], -1
			flags = nil
			continue
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 && flags != nil {
			value, ok := flags[flagName(a)]
			if !ok {
				return fmt.Errorf("%s has no flag -%s (its -h output lists: %s)", pkg, flagName(a), listFlags(flags))
			}
			if value && !strings.Contains(a, "=") {
				i++
			}
			continue
		}
		word := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(a) + `($|[^\w-])`)
		if !word.MatchString(usage) {
			return fmt.Errorf("%s: argument %q is not a word of its -h output", pkg, a)
		}
	}
	return nil
}

func listFlags(flags map[string]bool) string {
	var names []string
	for n := range flags {
		names = append(names, "-"+n)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// exec runs name args in st and returns its combined output.
func (c *checker) exec(st state, name string, args ...string) (string, error) {
	cheap := fmt.Sprintf("(in %s) %s", c.rel(st.dir), strings.Join(append([]string{name}, args...), " "))
	if len(st.env) > 0 {
		cheap = fmt.Sprintf("(in %s) %s %s", c.rel(st.dir), strings.Join(st.env, " "), strings.Join(append([]string{name}, args...), " "))
	}
	key := cacheKey(st, name, args)
	if r, ok := c.done[key]; ok {
		if c.verbose {
			fmt.Fprintln(os.Stderr, "doccheck:   (as before) "+cheap)
		}
		return r.out, r.err
	}
	start := time.Now()
	out, err := c.execOnce(st, cheap, name, args...)
	if c.verbose {
		fmt.Fprintf(os.Stderr, "doccheck:   %s (%.1fs)\n", cheap, time.Since(start).Seconds())
	}
	if c.done == nil {
		c.done = map[string]result{}
	}
	c.done[key] = result{out, err}
	return out, err
}

// A result is the output and error of a cheap command.
type result struct {
	out string
	err error
}

// cacheKey identifies a cheap command: the same command in the same
// directory with the same Go settings (the variables that start with GO or
// CGO) answers the same, so it is run once.
func cacheKey(st state, name string, args []string) string {
	key := []string{st.dir, name}
	key = append(key, args...)
	for _, kv := range st.env {
		if strings.HasPrefix(kv, "GO") || strings.HasPrefix(kv, "CGO") {
			key = append(key, kv)
		}
	}
	return strings.Join(key, "\x00")
}

// execOnce runs name args in st and returns its combined output.
func (c *checker) execOnce(st state, cheap, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = st.dir
	cmd.Env = append(slices.Clip(c.baseEnv), st.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	ownGroup(cmd)
	cmd.WaitDelay = 10 * time.Second
	c.ran++
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %v", ctx.Err(), c.timeout)
		}
		return out.String(), &checkFailure{cheap: cheap, output: out.String(), err: err}
	}
	return out.String(), nil
}

func (c *checker) rel(dir string) string {
	r, err := filepath.Rel(c.root, dir)
	if err != nil || r == "." {
		return "the root"
	}
	return r
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}
