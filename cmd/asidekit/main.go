// Command asidekit operates a service built on asidekit from a shell: it
// shows what Redis and the database hold for an id and whether they agree,
// invalidates, rebuilds Bloom filters, reports the CDC slot, rate limiters,
// sequences and settings. It speaks the library's key layout through the
// library's own packages, so what it reads is what the service reads.
//
// It learns the service's servers and tables from a JSON config file
// (asidekit.json, -config, or $ASIDEKIT_CONFIG), which `asidekit init`
// writes from the database's tables:
//
//	asidekit init -dsn "$DATABASE_URL" -redis 127.0.0.1:6379 -namespace catalog
//	asidekit get products 42
//
// Output is for people; -json prints one JSON document for scripts.
// Exit codes: 0 done (and what was compared agrees), 1 a problem found
// (cache and database disagree), 2 bad usage or input (unknown entity,
// malformed id, a destructive command without -yes), 3 PostgreSQL or Redis
// unreachable. Errors are one line on stderr.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand.
type command struct {
	name, args, summary string
	run                 func(r *runner, args []string) error
}

// commands are the subcommands, in the order usage lists them.
var commands []command

func init() {
	commands = []command{
		{"init", "-dsn DSN -redis ADDR [-namespace NS] [-o FILE]", "write a config file from the database's tables", runInit},
		{"get", "ENTITY ID", "what Redis and the database hold for an id, and whether they agree", runGet},
		{"getby", "ENTITY COLUMN VALUE", "the same through a unique column's mapping (repo's GetBy)", runGetBy},
		{"invalidate", "ENTITY ID...", "invalidate ids (needs -yes)", runInvalidate},
		{"invalidate-all", "ENTITY", "invalidate every cached row and mapping of an entity (needs -yes)", runInvalidateAll},
		{"inspect", "ENTITY [-rate N] [-for D]", "sample cached entries at N SQL reads a second, report what disagrees", runInspect},
		{"filter", "stats|warm|rebuild ENTITY", "the entity's Bloom filters (rebuild needs -yes)", runFilter},
		{"cdc", "status|drop", "the CDC slot: position, lag, holder (drop needs -yes)", runCDC},
		{"limit", "status KEY", "a rate limiter key's state, per algorithm, counting nothing", runLimit},
		{"seq", "peek NAME [-tz ZONE] [-day DATE]", "a seqgen counter: last number, next, marks, issuing nothing", runSeq},
		{"config", "get KEY | set KEY VALUE | list", "the repo/configstore settings (set needs -yes)", runConfig},
		{"entities", "", "the entities the config names", runEntities},
	}
}

// runner holds one run's options, streams and connections.
type runner struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	interactive    bool // stdin is a terminal: destructive commands may ask

	configPath string
	jsonOut    bool
	yes        bool
	// dsn, redis and cluster are the -dsn, -redis and -redis-cluster
	// flags, as given (a ${VAR} not yet expanded): they override the
	// config file's servers. "" when not given.
	dsn, redis, cluster string

	ctx context.Context
	cfg *Config
	b   backends
}

// run runs the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	r := &runner{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	r.interactive = isTerminal(stdin)
	defer r.b.close()
	err := r.dispatch(args)
	code := codeOf(err)
	if err != nil && err != errProblem && err != flag.ErrHelp {
		fmt.Fprintln(stderr, "asidekit:", oneLine(err.Error()))
	}
	if err == flag.ErrHelp {
		code = exitOK
	}
	return code
}

// dispatch parses the global flags and runs the command.
func (r *runner) dispatch(args []string) error {
	fs := r.flags("asidekit")
	fs.Usage = func() { r.usage(r.stderr) }
	if err := fs.Parse(args); err != nil {
		return r.flagErr(err)
	}
	if fs.NArg() == 0 {
		r.usage(r.stderr)
		return usageErr("no command")
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if name == "help" {
		r.usage(r.stdout)
		return nil
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
	if i < 0 {
		return usageErr("unknown command %q (asidekit help lists them)", name)
	}
	return commands[i].run(r, rest)
}

// usage prints the commands, the flags and the exit codes.
func (r *runner) usage(w io.Writer) {
	fmt.Fprintln(w, "usage: asidekit [-config FILE] [-dsn DSN] [-redis ADDR] [-json] [-yes] COMMAND [ARGS]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-15s %-34s %s\n", c.name, c.args, c.summary)
	}
	fmt.Fprintln(w, "\nflags (before or after the command's arguments):")
	fs := r.flags("asidekit")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintln(w, "\nexit codes: 0 ok, 1 a problem found (cache and database disagree),")
	fmt.Fprintln(w, "2 bad usage or input, 3 PostgreSQL or Redis unreachable")
}

// flags returns a FlagSet with the global flags.
func (r *runner) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	def := os.Getenv("ASIDEKIT_CONFIG")
	if def == "" {
		def = DefaultConfigFile
	}
	if r.configPath != "" {
		def = r.configPath
	}
	fs.StringVar(&r.configPath, "config", def, "the config `FILE` (default $ASIDEKIT_CONFIG, else asidekit.json)")
	fs.BoolVar(&r.jsonOut, "json", r.jsonOut, "print JSON for scripts instead of text")
	fs.BoolVar(&r.yes, "yes", r.yes, "do destructive work without asking")
	fs.StringVar(&r.dsn, "dsn", r.dsn, "the PostgreSQL `DSN`, instead of the config file's (${VAR} is expanded)")
	fs.StringVar(&r.redis, "redis", r.redis, "the Redis `ADDR` (host:port), instead of the config file's")
	fs.StringVar(&r.cluster, "redis-cluster", r.cluster, "comma-separated seed `ADDRS` of a Redis Cluster, instead of the config file's Redis")
	return fs
}

// parse parses args with fs, flags anywhere among the arguments, and
// checks the number of arguments is in [min, max] (max < 0: no limit).
func (r *runner) parse(fs *flag.FlagSet, args []string, usage string, min, max int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, r.flagErr(err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < min || (max >= 0 && len(pos) > max) {
		return nil, usageErr("usage: asidekit %s %s", fs.Name(), usage)
	}
	return pos, nil
}

func (r *runner) flagErr(err error) error {
	if err == flag.ErrHelp {
		r.usage(r.stdout)
		return err
	}
	return usageErr("%v", err)
}

// config loads the config file once.
func (r *runner) config() (*Config, error) {
	if r.cfg == nil {
		c, err := loadConfig(r.configPath)
		if err != nil {
			return nil, err
		}
		r.override(c)
		r.cfg = c
		r.b.cfg = c
	}
	return r.cfg, nil
}

// override puts the -dsn, -redis and -redis-cluster flags, expanded, in
// place of c's servers.
func (r *runner) override(c *Config) {
	if r.dsn != "" {
		c.DSN = os.ExpandEnv(r.dsn)
	}
	switch {
	case r.redis != "":
		c.Redis, c.RedisCluster = os.ExpandEnv(r.redis), nil
	case r.cluster != "":
		c.Redis, c.RedisCluster = "", strings.Split(os.ExpandEnv(r.cluster), ",")
	}
}

// output prints v as JSON with -json, else calls text.
func (r *runner) output(v any, text func(w io.Writer)) error {
	if r.jsonOut {
		enc := json.NewEncoder(r.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(r.stdout)
	return nil
}

// confirm lets a destructive command go on: with -yes, or when the user
// answers y on a terminal. Otherwise it is a usage error and nothing is
// done.
func (r *runner) confirm(what string) error {
	if r.yes {
		return nil
	}
	if !r.interactive {
		return usageErr("%s: refusing without -yes (not a terminal, so I cannot ask)", what)
	}
	fmt.Fprintf(r.stderr, "%s? [y/N] ", what)
	line, _ := bufio.NewReader(r.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return usageErr("%s: not confirmed", what)
}

// progress prints a progress line on stderr at most once a second.
type progress struct {
	w    io.Writer
	last time.Time
}

func (p *progress) printf(force bool, format string, args ...any) {
	if !force && time.Since(p.last) < time.Second {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// isTerminal reports whether r is a terminal: a character device other
// than /dev/null.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}

// oneLine keeps the first line of a message.
func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// runEntities lists the configured entities.
func runEntities(r *runner, args []string) error {
	fs := r.flags("entities")
	if _, err := r.parse(fs, args, "", 0, 0); err != nil {
		return err
	}
	cfg, err := r.config()
	if err != nil {
		return err
	}
	return r.output(cfg.Entities, func(w io.Writer) {
		for _, e := range cfg.Entities {
			filter := "no filter"
			if e.Filter != nil {
				filter = fmt.Sprintf("filter %d at %g", e.Filter.Capacity, e.Filter.FalsePositiveRate)
			}
			fmt.Fprintf(w, "%-20s table %s, key %s, unique [%s], codec %s, %s\n",
				e.Name, e.Table, e.Key, strings.Join(e.Unique, " "), e.Codec, filter)
		}
	})
}
