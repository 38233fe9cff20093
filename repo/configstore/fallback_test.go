package configstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo/configstore"
)

// downStore returns a Store on a private Redis, with a=1, b=2 and c
// deleted, the hash built, and the server stopped.
func downStore(t *testing.T, b backends, opts *configstore.Options) (*configstore.Store, privateRedis) {
	t.Helper()
	ctx := ctxT(t)
	srv := newPrivateRedis(t)
	s := b.store(t, srv.client, b.pg.DB, opts)
	if err := s.SetMany(ctx, map[string]string{"a": "1", "b": "2", "c": "3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.All(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	return s, srv
}

// Done when: values set, the server stopped; Get and All return the
// table's values, tombstones left out, and Stats counts the fallbacks.
func TestStore_redisDown_readsFallBack(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s, _ := downStore(t, b, nil)
	queries := countStatements(t, b.pg.DB)

	if v, err := s.Get(ctx, "a"); err != nil || v != "1" {
		t.Errorf("Get(a) with Redis down = %q, %v; want 1", v, err)
	}
	for _, k := range []string{"c", "never-set"} {
		if _, err := s.Get(ctx, k); !errors.Is(err, configstore.ErrNotFound) {
			t.Errorf("Get(%s) with Redis down: %v, want ErrNotFound", k, err)
		}
	}
	all, err := s.All(ctx)
	if want := map[string]string{"a": "1", "b": "2"}; err != nil || !mapsEqual(all, want) {
		t.Errorf("All with Redis down = %q, %v; want %q", all, err, want)
	}
	if n := queries.Load(); n != 4 {
		t.Errorf("%d SQL statements for 4 reads, want 4", n)
	}
	if st := s.Stats(); st.DBFallbacks != 4 || st.FallbackQueries != 4 {
		t.Errorf("Stats = %+v, want 4 fallbacks, 4 queries", st)
	}
}

// Done when: 50 concurrent All with Redis down share the table read. The
// first read is held until all 50 have seen Redis fail, so without the
// sharing there would be 50 queries.
func TestStore_All_redisDown_concurrentReadsShareQuery(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	srv := newPrivateRedis(t)
	want := make(map[string]string)
	for i := range 20 {
		want[fmt.Sprintf("key%02d", i)] = fmt.Sprintf("value %d", i)
	}
	if err := b.store(t, srv.client, b.pg.DB, nil).SetMany(ctxT(t), want); err != nil {
		t.Fatal(err)
	}
	srv.Stop()

	const readers = 50
	client := srv.newClient(t)
	failed := &countFailures{cmd: "hgetall", at: readers, reached: make(chan struct{})}
	client.AddHook(failed)
	s := b.store(t, client, b.pg.DB, &configstore.Options{WaitTimeout: 30 * time.Second})
	queries := countStatements(t, b.pg.DB)
	gate := gateQueries(t, b.pg.DB)
	go func() {
		<-failed.reached
		gate.open()
	}()
	readAllConcurrently(t, []*configstore.Store{s}, readers, want)

	// Only a reader delayed between its failed HGETALL and joining the
	// read for longer than the shared query takes starts another.
	n := queries.Load()
	t.Logf("%d SQL statements for %d concurrent All", n, readers)
	if n < 1 || n > 5 {
		t.Errorf("%d SQL statements for %d concurrent All with Redis down, want 1 (at most 5)", n, readers)
	}
	if st := s.Stats(); st.DBFallbacks != readers || st.FallbackQueries != n {
		t.Errorf("Stats = %+v, want %d fallbacks, %d queries", st, readers, n)
	}
}

// Done when: with NoDBFallback the Redis error is returned and nothing is
// read from the table.
func TestStore_redisDown_noDBFallback(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	s, _ := downStore(t, b, &configstore.Options{NoDBFallback: true})
	queries := countStatements(t, b.pg.DB)
	if _, err := s.Get(ctx, "a"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Get with Redis down and no fallback: %v, want the connection error", err)
	}
	if _, err := s.All(ctx); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("All with Redis down and no fallback: %v, want the connection error", err)
	}
	if n := queries.Load(); n != 0 {
		t.Errorf("%d SQL statements with NoDBFallback", n)
	}
	if st := s.Stats(); st.DBFallbacks != 0 || st.FallbackQueries != 0 {
		t.Errorf("Stats = %+v, want no fallbacks", st)
	}
}

// When the table fails too, the error wraps both failures.
func TestStore_redisDown_tableFailsToo(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	_, srv := downStore(t, b, nil)
	db := b.openDB(t)
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	_ = sqlDB.Close()
	s := b.store(t, srv.client, db, nil)
	_, err = s.Get(ctxT(t), "a")
	if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "database is closed") {
		t.Errorf("Get with Redis and the table down: %v, want both errors", err)
	}
	if st := s.Stats(); st.DBFallbacks != 0 || st.FallbackQueries != 1 {
		t.Errorf("Stats = %+v, want 0 fallbacks, 1 query", st)
	}
}

// Done when: a caller's ended context gives the context's error and no
// fallback query; a caller whose context ends while the shared query runs
// stops waiting at once.
func TestStore_redisDown_callerContext(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	s, _ := downStore(t, b, nil)
	gate := gateQueries(t, b.pg.DB)

	cancelled, cancel := context.WithCancel(ctxT(t))
	cancel()
	expired, cancel := context.WithDeadline(ctxT(t), time.Now().Add(-time.Second))
	defer cancel()
	for ctx, want := range map[context.Context]error{cancelled: context.Canceled, expired: context.DeadlineExceeded} {
		if _, err := s.Get(ctx, "a"); !errors.Is(err, want) {
			t.Errorf("Get: %v, want %v", err, want)
		}
		if _, err := s.All(ctx); !errors.Is(err, want) {
			t.Errorf("All: %v, want %v", err, want)
		}
	}
	if n := s.Stats().FallbackQueries; n != 0 {
		t.Errorf("%d fallback queries for reads with an ended context", n)
	}

	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := s.Get(ctx, "a")
		done <- err
	}()
	select {
	case <-gate.entered:
	case <-time.After(15 * time.Second):
		t.Fatal("the fallback query never started")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Get cancelled during the fallback query: %v, want context.Canceled", err)
	}
	gate.open()
	if st := s.Stats(); st.DBFallbacks != 0 || st.FallbackQueries != 1 {
		t.Errorf("Stats = %+v, want 1 query, no fallback served", st)
	}
}

// Done when: a Set with Redis down commits to the table and says the hash
// lags; reads meanwhile get it from the table; after the restart
// Reconcile copies it into the (lost) hash.
func TestStore_redisDown_setThenReconcile(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	srv := newPrivateRedis(t)
	s := b.store(t, srv.client, b.pg.DB, nil)
	if err := s.Set(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	err := s.Set(ctx, "k", "v2")
	if !errors.Is(err, configstore.ErrNotMirrored) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Set with Redis down: %v, want ErrNotMirrored wrapping the connection error", err)
	}
	if got := dbState(t, b.pg.DB, s.Scope())["k"]; got != "2:v2" {
		t.Fatalf("row = %q, want 2:v2 committed", got)
	}
	if v, err := s.Get(ctx, "k"); err != nil || v != "v2" {
		t.Fatalf("Get with Redis down = %q, %v; want v2 from the table", v, err)
	}
	if st := s.Stats(); st.MirrorErrors != 1 || st.DBFallbacks != 1 {
		t.Errorf("Stats = %+v, want 1 mirror error, 1 fallback", st)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	r, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Built || !slices.Equal(r.Missing, []string{"k"}) || r.Fixes() != 1 {
		t.Fatalf("Reconcile after the restart = %+v, want the hash built with k", r)
	}
	if h, db := hashState(t, srv.client, s.Key()), dbState(t, b.pg.DB, s.Scope()); !mapsEqual(h, db) {
		t.Fatalf("hash = %q, table = %q", h, db)
	}
	queries := countStatements(t, b.pg.DB)
	if v, err := s.Get(ctx, "k"); err != nil || v != "v2" {
		t.Fatalf("Get after Reconcile = %q, %v", v, err)
	}
	if n := queries.Load(); n != 0 {
		t.Errorf("Get after Reconcile ran %d statements, want 0", n)
	}
}

// A write whose copy fails while the hash survives (this process cut off
// from Redis, others not): other readers see the older value until
// Reconcile repairs the hash.
func TestStore_Set_notMirrored_hashKept_reconcileRepairs(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	reader := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := reader.Set(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.All(ctx); err != nil { // builds the hash
		t.Fatal(err)
	}
	cut := b.r.NewClient(t)
	cut.AddHook(failScripts{})
	writer := b.store(t, cut, b.pg.DB, nil)
	if err := writer.Set(ctx, "k", "v2"); !errors.Is(err, configstore.ErrNotMirrored) || !errors.Is(err, errInjected) {
		t.Fatalf("Set with the copy failing: %v, want ErrNotMirrored", err)
	}
	if v, err := reader.Get(ctx, "k"); err != nil || v != "v1" {
		t.Fatalf("Get before Reconcile = %q, %v; want the hash's v1", v, err)
	}
	r, err := reader.Reconcile(ctx)
	if err != nil || !slices.Equal(r.Stale, []string{"k"}) || r.Fixes() != 1 {
		t.Fatalf("Reconcile = %+v, %v; want Stale [k]", r, err)
	}
	if v, err := reader.Get(ctx, "k"); err != nil || v != "v2" {
		t.Fatalf("Get after Reconcile = %q, %v; want v2", v, err)
	}
}

// A Redis failure in the rebuild (the hash missing, the scripts failing)
// falls back to the table as well.
func TestStore_rebuildFails_fallsBack(t *testing.T) {
	t.Parallel()
	b := newBackends(t)
	ctx := ctxT(t)
	w := b.store(t, b.r.Client, b.pg.DB, nil)
	if err := w.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		t.Fatal(err)
	}
	if err := b.r.Client.Del(ctx, w.Key()).Err(); err != nil {
		t.Fatal(err)
	}
	c := b.r.NewClient(t)
	c.AddHook(failScripts{})
	s := b.store(t, c, b.pg.DB, nil)
	if v, err := s.Get(ctx, "a"); err != nil || v != "1" {
		t.Errorf("Get = %q, %v; want 1 from the table", v, err)
	}
	if all, err := s.All(ctx); err != nil || !mapsEqual(all, map[string]string{"a": "1", "b": "2"}) {
		t.Errorf("All = %q, %v", all, err)
	}
	if st := s.Stats(); st.DBFallbacks != 2 || st.Rebuilds != 0 {
		t.Errorf("Stats = %+v, want 2 fallbacks, no rebuild", st)
	}
	s = b.store(t, c, b.pg.DB, &configstore.Options{NoDBFallback: true})
	if _, err := s.Get(ctx, "a"); !errors.Is(err, errInjected) {
		t.Errorf("Get with NoDBFallback: %v, want the script error", err)
	}
}

var errInjected = errors.New("injected: connection reset")

// failScripts fails every script call, as a cut connection would.
type failScripts struct{}

func (failScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (failScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			cmd.SetErr(errInjected)
			return errInjected
		}
		return next(ctx, cmd)
	}
}

func (failScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// countFailures closes reached once at calls of cmd have failed.
type countFailures struct {
	cmd     string
	at      int64
	n       atomic.Int64
	reached chan struct{}
}

func (*countFailures) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *countFailures) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil && cmd.Name() == c.cmd && c.n.Add(1) == c.at {
			close(c.reached)
		}
		return err
	}
}

func (*countFailures) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// queryGate holds every query of a database until open is called.
type queryGate struct {
	entered  chan struct{} // closed when the first query arrives
	released chan struct{}
	once     sync.Once
}

func (g *queryGate) open() { g.once.Do(func() { close(g.released) }) }

// gateQueries makes every query of db wait for the gate to open (at most
// 15 s, a failure bound) and opens it at the end of the test.
func gateQueries(t *testing.T, db *gorm.DB) *queryGate {
	t.Helper()
	g := &queryGate{entered: make(chan struct{}), released: make(chan struct{})}
	var first sync.Once
	err := db.Callback().Query().Before("gorm:query").Register("test:gate", func(*gorm.DB) {
		first.Do(func() { close(g.entered) })
		select {
		case <-g.released:
		case <-time.After(15 * time.Second):
			t.Error("query gate never opened")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.open)
	return g
}
