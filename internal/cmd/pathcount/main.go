// Command pathcount counts the library functions, and the files they are
// in, that one call of each of the library's main paths runs: a fully
// configured Repository.Update (a unique key and the primary key in Bloom
// filters, a patchable cached list that the write moves the row out of and
// one it moves it into, WriteThrough), a repository hit (Repository.Get of
// a cached row) and a cacheaside hit (Entity.Get). It reads them from the
// coverage counters of its own build, cleared before the call and written
// after it: every function with a counted block ran, leaves and helpers
// included (a call the compiler inlined too). `make pathcount` builds it
// with -cover and runs it:
//
//	ASIDEKIT_POSTGRES_DSN=… ASIDEKIT_REDIS_ADDR=… make pathcount PATHCOUNTFLAGS=-v
//
// It also counts the Redis round trips of each call (a command or a
// pipeline sent, a go-redis hook), and of the Update those after its
// COMMIT (a GORM callback marks it).
//
// It works in a database of its own (created and dropped) and a Redis
// namespace of its own (deleted), on the servers the environment names.
// Functions that run in the background at the same time (a Cache's own
// loops) are counted too; -v lists every function so that a reader can
// tell them apart.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/coverage"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/token"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// module is the import path prefix of the library's packages.
const module = "github.com/asidekit/asidekit/"

func main() {
	verbose := flag.Bool("v", false, "list each path's functions")
	flag.Parse()
	if err := run(*verbose); err != nil {
		fmt.Fprintln(os.Stderr, "pathcount:", err)
		os.Exit(1)
	}
}

// path is one call whose functions are counted.
type path struct {
	name string
	call func(context.Context) error
}

// trips counts the Redis round trips of a client (a go-redis hook): all,
// and those after the COMMIT of a write.
type trips struct {
	committed   atomic.Bool
	all, commit atomic.Int64
}

func (t *trips) reset() { t.committed.Store(false); t.all.Store(0); t.commit.Store(0) }

func (t *trips) trip() {
	t.all.Add(1)
	if t.committed.Load() {
		t.commit.Add(1)
	}
}

func (t *trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (t *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { t.trip(); return next(ctx, cmd) }
}

func (t *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { t.trip(); return next(ctx, cmds) }
}

func run(verbose bool) error {
	if os.Getenv("ASIDEKIT_POSTGRES_DSN") == "" || os.Getenv("ASIDEKIT_REDIS_ADDR") == "" {
		return errors.New("set ASIDEKIT_POSTGRES_DSN and ASIDEKIT_REDIS_ADDR")
	}
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("%w (build it with -cover -covermode=atomic: make pathcount)", err)
	}
	ctx := context.Background()
	tr := &trips{}
	paths, cleanup, err := setup(ctx, tr)
	if err != nil {
		return err
	}
	defer cleanup()
	dir, err := os.MkdirTemp("", "pathcount")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	counted := map[string][2]int64{} // the round trips of each path: all, after the COMMIT
	for _, p := range paths {
		d := filepath.Join(dir, p.name)
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
		if err := coverage.WriteMetaDir(d); err != nil {
			return err
		}
		if err := coverage.ClearCounters(); err != nil {
			return err
		}
		tr.reset()
		if err := p.call(ctx); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		if err := coverage.WriteCountersDir(d); err != nil {
			return err
		}
		counted[p.name] = [2]int64{tr.all.Load(), tr.commit.Load()}
	}
	fmt.Printf("%-16s %9s %5s %11s %17s\n", "path", "functions", "files", "redis_trips", "after_the_commit")
	for _, p := range paths {
		fns, err := ran(filepath.Join(dir, p.name))
		if err != nil {
			return err
		}
		files := map[string]bool{}
		for _, f := range fns {
			files[f.file] = true
		}
		n := counted[p.name]
		fmt.Printf("%-16s %9d %5d %11d %17d\n", p.name, len(fns), len(files), n[0], n[1])
		if verbose {
			for _, f := range fns {
				fmt.Printf("    %s %s\n", f.file, f.name)
			}
		}
	}
	return nil
}

// setup makes the repository, the list and the rows the paths need, and
// runs each path once first, so that what is counted is a warm call
// (scripts loaded, connections open, the row cached).
func setup(ctx context.Context, tr *trips) ([]path, func(), error) {
	pg, drop, err := testcontainers.ExampleDatabase()
	if err != nil {
		return nil, nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("ASIDEKIT_REDIS_ADDR")})
	rdb.AddHook(tr)
	err = pg.DB.Callback().Update().After("gorm:commit_or_rollback_transaction").Register("pathcount:committed", func(*gorm.DB) {
		tr.committed.Store(true)
	})
	if err != nil {
		_ = rdb.Close()
		_ = drop()
		return nil, nil, err
	}
	ns := "pathcount-" + token.New()
	var closers []func() error
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
		_ = testcontainers.DeleteNamespace(context.Background(), rdb, ns)
		_ = rdb.Close()
		_ = drop()
	}
	fail := func(err error) ([]path, func(), error) { cleanup(); return nil, nil, err }
	if err := sample.Migrate(pg.DB); err != nil {
		return fail(err)
	}
	cache, err := cacheaside.New(rdb, &cacheaside.Options{Namespace: ns})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, cache.Close)
	users, err := repo.New[sample.User, int64](pg.DB, cache, &repo.Options{
		Filter:       &bloom.Options{Namespace: ns, Capacity: 1000, FalsePositiveRate: 0.01},
		FilterClient: rdb,
		WriteThrough: true,
	})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, users.Close)
	if err := users.WarmFilter(ctx); err != nil {
		return fail(err)
	}
	byName, err := repo.NewQuery(users, repo.QueryOf{Name: "by_name", Where: []string{"name"}, Order: "id"})
	if err != nil {
		return fail(err)
	}
	plain, err := cacheaside.NewEntity[sample.User](cache, "plain", cacheaside.Policy{})
	if err != nil {
		return fail(err)
	}
	load := func(context.Context, string) (sample.User, error) { return sample.User{Name: "plain"}, nil }
	u := sample.User{Email: "path@example.com", Name: "Ada"}
	if err := users.Create(ctx, &u); err != nil {
		return fail(err)
	}
	names := []string{"Ada", "Grace"}
	update := func(ctx context.Context) error {
		// The row moves from one cached list to the other and changes
		// its unique email.
		u.Name, u.Email = names[1], token.New()+"@example.com"
		names[0], names[1] = names[1], names[0]
		for _, n := range names {
			if _, _, err := byName.List(ctx, repo.Page{Size: 10}, n); err != nil {
				return err
			}
		}
		return nil
	}
	paths := []path{
		{"update", func(ctx context.Context) error { return users.Update(ctx, &u) }},
		{"repo hit", func(ctx context.Context) error { _, err := users.Get(ctx, u.ID); return err }},
		{"cacheaside hit", func(ctx context.Context) error { _, err := plain.Get(ctx, "1", load); return err }},
	}
	// Warm: every path once, and the lists cached again for the counted
	// update.
	for _, p := range paths {
		if err := update(ctx); err != nil {
			return fail(err)
		}
		if err := p.call(ctx); err != nil {
			return fail(err)
		}
	}
	return paths, cleanup, update(ctx)
}

// fn is one function that ran: its file (relative to the module) and name.
type fn struct{ file, name string }

// ran returns the library functions with a counted block in the coverage
// data of dir (`go tool covdata func`), the sample domain and this command
// left out, sorted by file.
func ran(dir string) ([]fn, error) {
	var out bytes.Buffer
	cmd := exec.Command("go", "tool", "covdata", "func", "-i="+dir)
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go tool covdata: %w", err)
	}
	var fns []fn
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		// github.com/asidekit/asidekit/repo/write.go:73:	Update	100.0%
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] == "0.0%" || !strings.HasPrefix(f[0], module) {
			continue
		}
		file, _, _ := strings.Cut(strings.TrimPrefix(f[0], module), ":")
		if strings.HasPrefix(file, "internal/sample/") || strings.HasPrefix(file, "internal/cmd/pathcount/") {
			continue
		}
		fns = append(fns, fn{file, f[1]})
	}
	sort.SliceStable(fns, func(i, j int) bool { return fns[i].file < fns[j].file })
	return fns, sc.Err()
}
