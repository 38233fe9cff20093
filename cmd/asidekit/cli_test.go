package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// TestMain is the CLI itself when the test binary runs under the name
// asidekit (buildCLI's link): the tests run the command as a user does, in
// a process of its own, without a separate build of it.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == cliName {
		main()
	}
	testcontainers.Main(m)
}

// cliName is the name under which the test binary is the CLI.
const cliName = "asidekit"

// Product is the test's model: no json tags, so the cached documents
// name fields as Go does (UpdatedAt) and the rows as PostgreSQL does
// (updated_at).
type Product struct {
	ID        int64  `gorm:"primaryKey"`
	Slug      string `gorm:"size:100;not null;uniqueIndex"`
	Name      string `gorm:"size:200;not null"`
	Price     int64
	UpdatedAt time.Time
}

// cliEnv is a service's backends, a repository over them, the CLI binary
// and its config file.
type cliEnv struct {
	bin, config string
	ns          string
	products    *repo.Repository[Product, int64]
	versions    *cacheaside.Entity[Product] // same keys, for Peek
	pg          *testcontainers.PostgresDB
	rn          *testcontainers.RedisNamespace
}

// buildCLI returns the command to run: a link named asidekit to the test
// binary, which TestMain turns into the CLI (the same package main, built
// once with the tests instead of by a second go build).
func buildCLI(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), cliName)
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

func newCLIEnv(t *testing.T, bin string) *cliEnv {
	t.Helper()
	return newCLIEnvOn(t, bin, testcontainers.Redis(t))
}

// newCLIEnvOn is newCLIEnv on the Redis rn (a Cluster's, for one).
func newCLIEnvOn(t *testing.T, bin string, rn *testcontainers.RedisNamespace) *cliEnv {
	t.Helper()
	return newCLIEnvWith(t, bin, testcontainers.Postgres(t), rn)
}

// newCLIEnvWith is newCLIEnv on the database pg and the Redis rn.
func newCLIEnvWith(t *testing.T, bin string, pg *testcontainers.PostgresDB, rn *testcontainers.RedisNamespace) *cliEnv {
	t.Helper()
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	if err := pg.DB.AutoMigrate(&Product{}); err != nil {
		t.Fatal(err)
	}
	cache, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	filter := &bloom.Options{Namespace: rn.Namespace, Capacity: 1000, FalsePositiveRate: 0.01}
	products, err := repo.New[Product, int64](pg.DB, cache, &repo.Options{Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = products.Close() })
	versions, err := cacheaside.NewEntity[Product](cache, "products", cacheaside.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	e := &cliEnv{bin: bin, ns: rn.Namespace, products: products, versions: versions, pg: pg, rn: rn}
	e.config = e.writeConfig(t, pg.DSN, rn.Addrs[0])
	if rn.Cluster {
		e.config = e.writeClusterConfig(t, pg.DSN, rn.Addrs)
	}
	return e
}

// writeConfig writes a config file naming dsn and the Redis at addr.
func (e *cliEnv) writeConfig(t *testing.T, dsn, addr string) string {
	t.Helper()
	cfg := Config{DSN: dsn, Redis: addr, Namespace: e.ns, Entities: []EntityConfig{{
		Table: "products", Unique: []string{"slug"},
		Filter: &FilterConfig{Capacity: 1000, FalsePositiveRate: 0.01},
	}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "asidekit.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeClusterConfig writes a config file naming dsn and the Cluster
// seeds.
func (e *cliEnv) writeClusterConfig(t *testing.T, dsn string, seeds []string) string {
	t.Helper()
	path := e.writeConfig(t, dsn, "")
	editConfig(t, path, func(c *Config) { c.Redis, c.RedisCluster = "", seeds })
	return path
}

// editConfig changes the config file at path.
func editConfig(t *testing.T, path string, edit func(*Config)) {
	t.Helper()
	var cfg Config
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	edit(&cfg)
	if b, err = json.Marshal(cfg); err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// result is one run of the binary.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the CLI with the env's config (or another, when args start
// with -config) and stdin not a terminal.
func (e *cliEnv) run(t *testing.T, args ...string) result {
	t.Helper()
	return e.runEnv(t, nil, args...)
}

// runEnv is run with env (VAR=value) added to the process's environment.
func (e *cliEnv) runEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	if len(args) == 0 || args[0] != "-config" {
		args = append([]string{"-config", e.config}, args...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &errb, strings.NewReader("")
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// want checks the exit code and returns the JSON output decoded into v.
func (r result) want(t *testing.T, code int, v any) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if v != nil {
		reflect.ValueOf(v).Elem().SetZero() // no field left from a previous run
		if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, r.stdout)
		}
	}
}

// wantError checks a failure: the exit code and one line on stderr.
func (r result) wantError(t *testing.T, code int, substr string) {
	t.Helper()
	r.want(t, code, nil)
	msg := strings.TrimSuffix(r.stderr, "\n")
	if msg == "" || strings.Contains(msg, "\n") || !strings.Contains(msg, substr) {
		t.Fatalf("stderr %q: want one line with %q", r.stderr, substr)
	}
}

func (e *cliEnv) version(t *testing.T, id string) string {
	t.Helper()
	p, err := e.versions.Peek(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return p.Version
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestCLI runs the binary against real servers: reports that agree,
// disagreement after a write behind the library's back, invalidation,
// and bad input that fails with one line and writes nothing.
func TestCLI(t *testing.T) {
	bin := buildCLI(t)
	ctx := context.Background()

	t.Run("get and getby agree", func(t *testing.T) {
		t.Parallel()
		e := newCLIEnv(t, bin)
		p := Product{ID: 42, Slug: "lamp", Name: "Lamp", Price: 1999}
		if err := e.products.Put(ctx, &p); err != nil {
			t.Fatal(err)
		}
		var rep idReport
		e.run(t, "get", "products", "42", "-json").want(t, exitOK, &rep)
		if rep.Redis.State != "absent" || !rep.DB.Found || !rep.Agree {
			t.Fatalf("before a read: %+v", rep)
		}
		if _, err := e.products.GetBy(ctx, "slug", "lamp"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.Get(ctx, 7); err == nil {
			t.Fatal("Get(7) found a row")
		}
		e.run(t, "get", "-json", "products", "42").want(t, exitOK, &rep)
		if rep.Redis.State != "value" || !rep.Agree || rep.Compare == nil || rep.Compare.Compared != 5 || rep.Redis.Version == "" {
			t.Fatalf("cached: %+v %+v", rep, rep.Compare)
		}
		e.run(t, "get", "-json", "products", "7").want(t, exitOK, &rep)
		// Cached as absent, or, when the repository's filter was complete
		// already, ruled out by it and not cached at all.
		if (rep.Redis.State != "not found" && rep.Redis.State != "absent") || rep.DB.Found || !rep.Agree {
			t.Fatalf("absent: %+v", rep)
		}
		var by byReport
		e.run(t, "getby", "-json", "products", "slug", "lamp").want(t, exitOK, &by)
		if by.Mapping.State != "value" || by.MapsTo != "42" || !by.Agree || by.Row == nil || !by.Row.Agree {
			t.Fatalf("getby: %+v", by)
		}
		text := e.run(t, "get", "products", "42")
		text.want(t, exitOK, nil)
		if !strings.Contains(text.stdout, "verdict  agree") {
			t.Fatalf("text output:\n%s", text.stdout)
		}
	})

	t.Run("disagreement and invalidate", func(t *testing.T) {
		t.Parallel()
		e := newCLIEnv(t, bin)
		p := Product{ID: 1, Slug: "chair", Name: "Chair", Price: 500}
		if err := e.products.Put(ctx, &p); err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.Get(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.GetBy(ctx, "slug", "chair"); err != nil {
			t.Fatal(err)
		}
		ghost := Product{ID: 2, Slug: "bench", Name: "Bench"}
		if err := e.products.Put(ctx, &ghost); err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.Get(ctx, 2); err != nil {
			t.Fatal(err)
		}
		var ins inspectReport
		e.run(t, "inspect", "-json", "-grace", "0", "products").want(t, exitOK, &ins)
		if ins.Inspected != 3 || ins.Consistent != 3 || !ins.NinesAtLeast {
			t.Fatalf("inspect before: %+v", ins)
		}
		// Behind the library's back, with no CDC: the cache keeps the
		// old rows.
		if err := e.pg.DB.Exec("UPDATE products SET price = 600, slug = 'stool' WHERE id = 1").Error; err != nil {
			t.Fatal(err)
		}
		if err := e.pg.DB.Exec("DELETE FROM products WHERE id = 2").Error; err != nil {
			t.Fatal(err)
		}
		e.run(t, "inspect", "-json", "-grace", "0", "products").want(t, exitProblem, &ins)
		if ins.Inspected != 3 || ins.Consistent != 0 || ins.Violations[kindStale] != 1 ||
			ins.Violations[kindGhost] != 1 || ins.Violations[kindMapping] != 1 {
			t.Fatalf("inspect after out-of-band writes: %+v", ins)
		}
		e.run(t, "inspect", "-repair", "products").wantError(t, exitUsage, "-yes")
		e.run(t, "inspect", "-json", "-grace", "0", "-repair", "-yes", "products").want(t, exitProblem, &ins)
		if ins.Repaired != 3 {
			t.Fatalf("inspect -repair: %+v", ins)
		}
		e.run(t, "inspect", "-json", "-grace", "0", "products").want(t, exitOK, &ins)
		if ins.Inspected != 0 {
			t.Fatalf("inspect after the repair: %+v", ins)
		}
		if _, err := e.products.Get(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.GetBy(ctx, "slug", "chair"); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("GetBy(chair) after the update: %v", err)
		}
		// Once more behind the library's back, for get.
		if err := e.pg.DB.Exec("UPDATE products SET price = 700, slug = 'chair' WHERE id = 1").Error; err != nil {
			t.Fatal(err)
		}
		var rep idReport
		e.run(t, "get", "-json", "products", "1").want(t, exitProblem, &rep)
		if rep.Agree || rep.Compare == nil || strings.Join(rep.Compare.Differ, ",") != "price,slug" {
			t.Fatalf("after an out-of-band update: %+v %+v", rep, rep.Compare)
		}
		var by byReport
		e.run(t, "getby", "-json", "products", "slug", "chair").want(t, exitProblem, &by)
		if by.Agree || by.Mapping.State != "not found" || by.Row == nil || by.Row.ID != "1" || by.Row.Agree {
			t.Fatalf("getby of a slug cached as absent: %+v", by)
		}

		// Destructive without -yes, stdin not a terminal: refused.
		v := e.version(t, "1")
		e.run(t, "invalidate", "products", "1").wantError(t, exitUsage, "-yes")
		if e.version(t, "1") != v {
			t.Fatal("invalidate without -yes changed the version")
		}
		var inv invalidated
		e.run(t, "invalidate", "-json", "-yes", "products", "1").want(t, exitOK, &inv)
		if e.version(t, "1") == v || len(inv.Mappings) != 1 || inv.Mappings[0] != "products.by.slug chair" {
			t.Fatalf("invalidate: version %q → %q, %+v", v, e.version(t, "1"), inv)
		}
		e.run(t, "get", "-json", "products", "1").want(t, exitOK, &rep)
		if rep.Redis.State != "absent" || !rep.Agree {
			t.Fatalf("after invalidate: %+v", rep)
		}
		if _, err := e.products.Get(ctx, 1); err != nil {
			t.Fatal(err)
		}
		e.run(t, "get", "-json", "products", "1").want(t, exitOK, &rep)
		if rep.Redis.State != "value" || !rep.Agree {
			t.Fatalf("after a reload: %+v", rep)
		}
		e.run(t, "invalidate-all", "-yes", "products").want(t, exitOK, nil)
		e.run(t, "get", "-json", "products", "1").want(t, exitOK, &rep)
		if rep.Redis.State != "absent" {
			t.Fatalf("after invalidate-all: %+v", rep)
		}
	})

	t.Run("operations", func(t *testing.T) { t.Parallel(); testOperations(t, bin) })
	t.Run("server overrides", func(t *testing.T) { t.Parallel(); testOverrides(t, bin) })

	t.Run("cdc slot", func(t *testing.T) {
		t.Parallel()
		e := newCLIEnvWith(t, bin, testcontainers.LogicalPostgres(t), testcontainers.Redis(t))
		slot := "cli_" + strings.ToLower(strings.NewReplacer("-", "_", ":", "_").Replace(e.ns))
		editConfig(t, e.config, func(c *Config) { c.CDCSlot = slot })
		inv, err := cdc.New(e.pg.DSN, &cdc.Options{Slot: slot})
		if err != nil {
			t.Fatal(err)
		}
		if err := inv.Register(e.products); err != nil {
			t.Fatal(err)
		}
		// Registered after LogicalPostgres: runs before its database is
		// dropped, which PostgreSQL refuses while the slot exists.
		t.Cleanup(func() { _ = inv.Drop(context.Background()) })
		if err := inv.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		testInitSlot(t, e, slot)
		var st slotStatus
		e.run(t, "cdc", "status", "-json").want(t, exitProblem, &st)
		if !st.Exists || st.Holder != nil || st.Confirmed == "" || st.Problem == "" {
			t.Fatalf("cdc status, no holder: %+v", st)
		}
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- inv.Run(runCtx) }()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		// A write made after Run started is applied only by the slot's
		// holder: once CatchUp returns, Run holds the slot.
		if err := e.pg.DB.Exec("INSERT INTO products (id, slug, name) VALUES (9, 'nine', 'Nine')").Error; err != nil {
			t.Fatal(err)
		}
		if err := inv.CatchUp(wctx); err != nil {
			t.Fatal(err)
		}
		e.run(t, "cdc", "status", "-json").want(t, exitOK, &st)
		if st.Holder == nil || st.Holder.PID == 0 || st.Problem != "" {
			t.Fatalf("cdc status, held: %+v", st)
		}
		e.run(t, "cdc", "drop", "-yes").wantError(t, exitProblem, "in use")
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// The server may see the holder's connection close a moment
		// after Run returns: drop until it does.
		var r result
		for range 100 {
			if r = e.run(t, "cdc", "drop", "-yes"); r.code != exitProblem {
				break
			}
		}
		r.want(t, exitOK, nil)
		e.run(t, "cdc", "status", "-json").want(t, exitProblem, &st)
		if st.Exists {
			t.Fatalf("cdc status after drop: %+v", st)
		}
	})

	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		e := newCLIEnvOn(t, bin, testcontainers.RedisCluster(t))
		for id := int64(1); id <= 20; id++ {
			p := Product{ID: id, Slug: fmt.Sprint("p", id), Name: "P"}
			if err := e.products.Put(ctx, &p); err != nil {
				t.Fatal(err)
			}
			if _, err := e.products.Get(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.pg.DB.Exec("UPDATE products SET name = 'Q' WHERE id IN (3, 17)").Error; err != nil {
			t.Fatal(err)
		}
		var rep idReport
		e.run(t, "get", "-json", "products", "3").want(t, exitProblem, &rep)
		if rep.Redis.State != "value" || rep.Kind != kindStale {
			t.Fatalf("get on a Cluster: %+v", rep)
		}
		// The walk visits every master: the 20 rows, spread over them.
		var ins inspectReport
		e.run(t, "inspect", "-json", "-grace", "0", "products").want(t, exitProblem, &ins)
		if ins.Inspected != 20 || ins.Violations[kindStale] != 2 {
			t.Fatalf("inspect on a Cluster: %+v", ins)
		}
		e.run(t, "invalidate-all", "-yes", "products").want(t, exitOK, nil)
		e.run(t, "inspect", "-json", "-grace", "0", "products").want(t, exitOK, &ins)
		if ins.Inspected != 0 {
			t.Fatalf("inspect after invalidate-all: %+v", ins)
		}
	})

	t.Run("inspect skips what changes", func(t *testing.T) {
		t.Parallel()
		e := newCLIEnv(t, bin)
		p := Product{ID: 3, Slug: "shelf", Name: "Shelf"}
		if err := e.products.Put(ctx, &p); err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.Get(ctx, 3); err != nil {
			t.Fatal(err)
		}
		if err := e.pg.DB.Exec("UPDATE products SET price = 9 WHERE id = 3").Error; err != nil {
			t.Fatal(err)
		}
		// The suspect is invalidated between the two looks, as an
		// invalidation in flight (CDC's lag) would be: not a violation.
		cmd := exec.Command(e.bin, "-config", e.config, "inspect", "-json", "-grace", "10s", "products")
		var out bytes.Buffer
		cmd.Stdout = &out
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		for sc.Scan() && !strings.Contains(sc.Text(), "looking again at 1 suspect") {
		}
		if err := e.versions.Invalidate(ctx, "3"); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("inspect: %v\n%s", err, out.String())
		}
		var ins inspectReport
		if err := json.Unmarshal(out.Bytes(), &ins); err != nil {
			t.Fatal(err)
		}
		if ins.Inspected != 1 || len(ins.Found) != 0 {
			t.Fatalf("inspect: %+v", ins)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		t.Parallel()
		e := newCLIEnv(t, bin)
		p := Product{ID: 5, Slug: "desk", Name: "Desk"}
		if err := e.products.Put(ctx, &p); err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.Get(ctx, 5); err != nil {
			t.Fatal(err)
		}
		v := e.version(t, "5")
		wrongDSN := e.writeConfig(t, "postgres://postgres@"+deadAddr(t)+"/test?sslmode=disable", e.rn.Addrs[0])
		redisDown := e.writeConfig(t, e.pg.DSN, deadAddr(t))
		for _, c := range []struct {
			name   string
			args   []string
			code   int
			substr string
		}{
			{"unknown command", []string{"frobnicate"}, exitUsage, "unknown command"},
			{"unknown entity", []string{"get", "users", "5"}, exitUsage, `unknown entity "users"`},
			{"missing id", []string{"get", "products"}, exitUsage, "usage"},
			{"malformed id", []string{"get", "products", "abc"}, exitUsage, "malformed"},
			{"malformed id, invalidate", []string{"invalidate", "-yes", "products", "5", "abc"}, exitUsage, "malformed"},
			{"not a unique column", []string{"getby", "products", "name", "Desk"}, exitUsage, "unique"},
			{"no config", []string{"-config", filepath.Join(t.TempDir(), "none.json"), "get", "products", "5"}, exitUsage, "no config file"},
			{"wrong DSN", []string{"-config", wrongDSN, "get", "products", "5"}, exitUnreachable, "PostgreSQL unreachable"},
			{"wrong DSN, invalidate", []string{"-config", wrongDSN, "invalidate", "-yes", "products", "5"}, exitUnreachable, "PostgreSQL unreachable"},
			{"Redis down", []string{"-config", redisDown, "get", "products", "5"}, exitUnreachable, "Redis unreachable"},
			{"Redis down, invalidate-all", []string{"-config", redisDown, "invalidate-all", "-yes", "products"}, exitUnreachable, "Redis unreachable"},
		} {
			t.Run(c.name, func(t *testing.T) {
				e.run(t, c.args...).wantError(t, c.code, c.substr)
			})
		}
		if got := e.version(t, "5"); got != v {
			t.Fatalf("bad input changed id 5's version: %q → %q", v, got)
		}
		var rep idReport
		e.run(t, "get", "-json", "products", "5").want(t, exitOK, &rep)
		if rep.Redis.State != "value" {
			t.Fatalf("bad input changed the entry: %+v", rep)
		}
	})
}

// testOperations: init's config reads what the service caches; filter
// warm and rebuild make the repository's filter take rows inserted behind
// its back; config set|get|list; cdc status without a slot.
func testOperations(t *testing.T, bin string) {
	ctx := context.Background()
	e := newCLIEnv(t, bin)
	p := Product{ID: 42, Slug: "lamp", Name: "Lamp"}
	if err := e.products.Put(ctx, &p); err != nil {
		t.Fatal(err)
	}

	t.Run("init", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "asidekit.json")
		var ents []EntityConfig
		e.run(t, "-json", "init", "-dsn", e.pg.DSN, "-redis", e.rn.Addrs[0], "-namespace", e.ns, "-o", path).want(t, exitOK, &ents)
		i := slices.IndexFunc(ents, func(c EntityConfig) bool { return c.Name == "products" })
		if i < 0 || ents[i].Key != "id" || !slices.Equal(ents[i].Unique, []string{"slug"}) {
			t.Fatalf("init: %+v", ents)
		}
		if _, err := e.products.Get(ctx, 42); err != nil {
			t.Fatal(err)
		}
		var rep idReport
		e.run(t, "-config", path, "get", "-json", "products", "42").want(t, exitOK, &rep)
		if rep.Redis.State != "value" || !rep.Agree {
			t.Fatalf("get with init's config: %+v", rep)
		}
		e.run(t, "init", "-dsn", e.pg.DSN, "-redis", e.rn.Addrs[0], "-o", path).wantError(t, exitUsage, "exists")
	})

	t.Run("filter", func(t *testing.T) {
		var fr []filterReport
		e.run(t, "filter", "warm", "-json", "products").want(t, exitOK, &fr)
		// The repository may have rebuilt a filter itself (its first
		// check starts one): warm rebuilds those still incomplete.
		if len(fr) != 2 || fr[0].Name != "products" || fr[1].Name != "products.by.slug" {
			t.Fatalf("warm: %+v", fr)
		}
		for _, f := range fr {
			if f.Stats.UntrustedShards != 0 || (f.Rebuilt != -1 && f.Rebuilt != 1) {
				t.Fatalf("warm: %+v", fr)
			}
		}
		// A row inserted behind the repository's back (no CDC): the
		// complete filter rules it out, until a rebuild.
		if err := e.pg.DB.Exec("INSERT INTO products (id, slug, name, price) VALUES (77, 'sofa', 'Sofa', 1)").Error; err != nil {
			t.Fatal(err)
		}
		if _, err := e.products.Get(ctx, 77); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("Get(77) before the rebuild: %v, want the filter's ErrNotFound", err)
		}
		e.run(t, "filter", "rebuild", "products").wantError(t, exitUsage, "-yes")
		e.run(t, "filter", "rebuild", "-yes", "-json", "products").want(t, exitOK, &fr)
		if fr[0].Rebuilt != 2 || fr[1].Rebuilt != 2 {
			t.Fatalf("rebuild: %+v", fr)
		}
		if err := e.products.Filter().Add(ctx, "x"); err != nil { // the filter still works
			t.Fatal(err)
		}
		if ok, err := e.products.Filter().MightContain(ctx, "77"); err != nil || !ok {
			t.Fatalf("after the rebuild, 77 in the filter: %v %v", ok, err)
		}
		text := e.run(t, "filter", "stats", "products")
		text.want(t, exitOK, nil)
		if !strings.Contains(text.stdout, "products.by.slug") || !strings.Contains(text.stdout, "complete") {
			t.Fatalf("stats:\n%s", text.stdout)
		}
	})

	t.Run("config", func(t *testing.T) {
		e.run(t, "config", "set", "feature.x", "on").wantError(t, exitUsage, "-yes")
		e.run(t, "config", "get", "feature.x").want(t, exitProblem, nil)
		e.run(t, "config", "set", "-yes", "feature.x", "on").want(t, exitOK, nil)
		got := e.run(t, "config", "get", "feature.x")
		got.want(t, exitOK, nil)
		if got.stdout != "on\n" {
			t.Fatalf("config get: %q", got.stdout)
		}
		var all map[string]string
		e.run(t, "config", "list", "-json").want(t, exitOK, &all)
		if all["feature.x"] != "on" {
			t.Fatalf("config list: %v", all)
		}
	})

	t.Run("seq and limit", func(t *testing.T) {
		g, err := seqgen.New(e.rn.Client, e.pg.DB, &seqgen.Options{Namespace: e.ns, Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if _, err := g.NextN(ctx, "orders", 2); err != nil {
			t.Fatal(err)
		}
		var sr seqReport
		e.run(t, "seq", "peek", "orders", "-tz", "UTC", "-json").want(t, exitOK, &sr)
		if !sr.Exists || sr.Last != 2 || sr.DBMark < 2 {
			t.Fatalf("seq peek: %+v", sr)
		}
		if next, err := g.Next(ctx, "orders"); err != nil || next != sr.Next {
			t.Fatalf("Next after seq peek: %q (%v), want %q", next, err, sr.Next)
		}
		e.run(t, "seq", "peek", "", "-tz", "UTC").wantError(t, exitUsage, "biz")

		lim, err := limit.NewFixedWindow(e.rn.Client, limit.FixedWindow{Limit: 3, Window: time.Minute}, &limit.Options{Namespace: e.ns})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lim.AllowN(ctx, "login:ada", 2); err != nil {
			t.Fatal(err)
		}
		var ls []limitState
		e.run(t, "limit", "status", "login:ada", "-json").want(t, exitOK, &ls)
		if len(ls) != 1 || ls[0].Algorithm != "fw" || ls[0].TTLMillis <= 0 {
			t.Fatalf("limit status: %+v", ls)
		}
		if res, err := lim.Allow(ctx, "login:ada"); err != nil || !res.Allowed || res.Remaining != 0 {
			t.Fatalf("Allow after limit status: %+v, %v", res, err)
		}
	})

	t.Run("cdc", func(t *testing.T) {
		var st slotStatus
		e.run(t, "cdc", "status", "-json").want(t, exitProblem, &st)
		if st.Exists || st.Problem == "" {
			t.Fatalf("cdc status without a slot: %+v", st)
		}
		e.run(t, "cdc", "drop").wantError(t, exitUsage, "-yes")
	})
}
