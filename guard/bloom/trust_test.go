package bloom_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// hooked returns a Filter whose automatic rebuild attempts report their
// outcome on the returned channel; it is closed at the end of the test.
func hooked(t *testing.T, c redis.UniversalClient, ns, name string, opts bloom.Options) (*bloom.Filter, <-chan error) {
	t.Helper()
	f := newFilter(t, c, ns, name, opts)
	done := make(chan error, 16)
	bloom.OnAutoRebuild(f, func(err error) { done <- err })
	t.Cleanup(func() { _ = f.Close() })
	return f, done
}

// outcome waits for the next automatic rebuild attempt of a hooked Filter.
func outcome(t *testing.T, ctx context.Context, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		t.Fatalf("no automatic rebuild ended: %v", ctx.Err())
		return nil
	}
}

// dropKeys deletes every key of filter name (meta and both generations of
// each shard) one by one, as a Redis restarted empty, a FLUSHALL or an
// eviction would, without touching other tests' keys.
func dropKeys(t *testing.T, ctx context.Context, c redis.UniversalClient, ns, name string, shards int) {
	t.Helper()
	for s := 0; s < shards; s++ {
		meta, buf0, buf1 := shardKeys(ns, name, s)
		for _, k := range []string{meta, buf0, buf1} {
			if err := c.Del(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func mustReady(t *testing.T, ctx context.Context, f *bloom.Filter, want bool) {
	t.Helper()
	if ready, err := f.Ready(ctx); err != nil || ready != want {
		t.Fatalf("Ready = %v, %v; want %v", ready, err, want)
	}
}

// checkLostKeys is issue 28: the filter's keys vanish from Redis (restart
// without persistence, FLUSHALL, eviction, failover to a replica that
// lacked them). Without the completeness rule every existing key reads as
// absent; with it every key reads "maybe" until the automatic rebuild from
// Options.Source, run by one process under a lease while the others keep
// answering "maybe", makes the filter trusted again, keeping the keys
// added meanwhile.
func checkLostKeys(t *testing.T, r *testcontainers.RedisNamespace) {
	const name, shards = "lost", 4
	ctx := testCtx(t)
	table, absent := keyset("row", 2000), keyset("none", 2000)
	var sourceCalls atomic.Int64
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var block atomic.Bool // the Source waits for release once entered
	opts := bloom.Options{
		Capacity: 10_000, FalsePositiveRate: 0.001, Shards: shards,
		RebuildInterval: time.Hour, // one attempt per Filter: no retry in this test
		Source: func(ctx context.Context, add func([]string) error) error {
			sourceCalls.Add(1)
			if block.Load() {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return sliceSource(table, 300)(ctx, add)
		},
	}

	// A brand-new filter: "maybe" for everything; Ready starts the fill.
	first, firstDone := hooked(t, r.Client, r.Namespace, name, opts)
	mustReady(t, ctx, first, false)
	if err := outcome(t, ctx, firstDone); err != nil {
		t.Fatalf("first automatic rebuild: %v", err)
	}
	mustReady(t, ctx, first, true)
	mustContainAll(t, ctx, first, table)
	got, err := first.MightContainMany(ctx, absent)
	if err != nil {
		t.Fatal(err)
	}
	if c := countTrue(got); c > len(absent)/50 {
		t.Fatalf("trusted filter: %d of %d absent keys read as present", c, len(absent))
	}

	dropKeys(t, ctx, r.Client, r.Namespace, name, shards)

	// Without the rule: the bug, every existing key reads as absent.
	buggy := newFilter(t, r.NewClient(t), r.Namespace, name, bloom.Options{Capacity: opts.Capacity, FalsePositiveRate: opts.FalsePositiveRate, Shards: shards})
	bloom.IgnoreTrust(buggy)
	got, err = buggy.MightContainMany(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("without the rule: %d of %d existing keys read as absent", len(table)-countTrue(got), len(table))
	if countTrue(got) != 0 {
		t.Fatalf("without the rule %d existing keys still read as present; the test shows nothing", countTrue(got))
	}

	// With it: another process checks, answers "maybe" and starts the
	// rebuild, whose Source we hold.
	block.Store(true)
	second, secondDone := hooked(t, r.NewClient(t), r.Namespace, name, opts)
	got, err = second.MightContainMany(ctx, table)
	if err != nil {
		t.Fatal(err)
	}
	if countTrue(got) != len(table) {
		t.Fatalf("untrusted filter: %d of %d existing keys read as absent", len(table)-countTrue(got), len(table))
	}
	if ok, err := second.MightContain(ctx, absent[0]); err != nil || !ok {
		t.Fatalf("untrusted filter: MightContain(absent) = %v, %v; want maybe", ok, err)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the automatic rebuild did not call the Source")
	}
	st, err := second.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.UntrustedChecks != int64(len(table)+1) || st.UntrustedShards != shards || !st.Rebuilding {
		t.Fatalf("during the rebuild: %+v", st)
	}

	// A third process meets the second one's lease and leaves it the job.
	third, thirdDone := hooked(t, r.NewClient(t), r.Namespace, name, opts)
	if ok, err := third.MightContain(ctx, table[0]); err != nil || !ok {
		t.Fatalf("third: MightContain = %v, %v", ok, err)
	}
	if err := outcome(t, ctx, thirdDone); !errors.Is(err, bloom.ErrLeaseHeld) {
		t.Fatalf("third process's attempt: %v, want the lease held", err)
	}
	// A row created during the rebuild is not lost.
	if err := third.Add(ctx, "created-during"); err != nil {
		t.Fatal(err)
	}
	// More checks of the second one start nothing more: one at a time.
	if _, err := second.MightContainMany(ctx, absent[:100]); err != nil {
		t.Fatal(err)
	}
	if n := bloom.AutoAttempts(second); n != 1 {
		t.Fatalf("%d attempts in the second process", n)
	}

	close(release)
	if err := outcome(t, ctx, secondDone); err != nil {
		t.Fatalf("automatic rebuild after the loss: %v", err)
	}
	for _, f := range []*bloom.Filter{first, second, third} {
		mustReady(t, ctx, f, true)
	}
	mustContainAll(t, ctx, third, append(slices.Clone(table), "created-during"))
	got, err = third.MightContainMany(ctx, absent)
	if err != nil {
		t.Fatal(err)
	}
	if c := countTrue(got); c > len(absent)/50 {
		t.Fatalf("trusted again: %d of %d absent keys read as present", c, len(absent))
	}
	st, err = second.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.AutoRebuilds != 1 || st.AutoRebuildFailures != 0 || st.UntrustedShards != 0 || st.Rebuilding {
		t.Fatalf("after the rebuild: %+v", st)
	}
	if n := sourceCalls.Load(); n != 2 {
		t.Errorf("the Source ran %d times, want 2 (the fill, the repair)", n)
	}
	// The lease is released.
	if n, err := r.Client.Exists(ctx, r.Namespace+":bf:{"+name+"}:lease").Result(); err != nil || n != 0 {
		t.Errorf("lease left behind: %d, %v", n, err)
	}
}

func TestFilter_lostKeys(t *testing.T) {
	t.Parallel()
	checkLostKeys(t, testcontainers.Redis(t))
}

func TestFilter_lostKeys_cluster(t *testing.T) {
	t.Parallel()
	checkLostKeys(t, testcontainers.RedisCluster(t))
}

// Losing one key of a shard (an evicted bitmap, an evicted meta hash)
// distrusts that shard only; the others keep answering "absent".
func TestFilter_lostKeys_oneShard(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	const name, shards = "partial", 4
	f := newFilter(t, r.Client, r.Namespace, name, bloom.Options{Capacity: 10_000, FalsePositiveRate: 0.001, Shards: shards})
	table, absent := keyset("row", 2000), keyset("none", 2000)
	fill(t, ctx, f, table)

	// The current generation is 1: buffer 1 holds the bits.
	_, _, buf1 := shardKeys(r.Namespace, name, 0)
	if err := r.Client.Del(ctx, buf1).Err(); err != nil {
		t.Fatal(err)
	}
	mustReady(t, ctx, f, false)
	mustContainAll(t, ctx, f, table)
	st, err := f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.MightContainMany(ctx, absent)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	maybe := st2.UntrustedChecks - st.UntrustedChecks // absent keys of shard 0
	t.Logf("bitmap of shard 0 lost: %d of %d absent keys answered maybe for it, %d true in all", maybe, len(absent), countTrue(got))
	if st.UntrustedShards != 1 || maybe < int64(len(absent)/shards/2) || maybe > int64(len(absent)/shards*2) ||
		int64(countTrue(got)) > maybe+int64(len(absent)/50) {
		t.Fatalf("one bitmap lost: %+v, %d maybe, %d true", st, maybe, countTrue(got))
	}

	meta, _, _ := shardKeys(r.Namespace, name, 1)
	if err := r.Client.Del(ctx, meta).Err(); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stats(ctx); err != nil || st.UntrustedShards != 2 {
		t.Fatalf("one meta hash lost too: %+v, %v", st, err)
	}
	mustContainAll(t, ctx, f, table)
	// A Rebuild repairs it.
	fill(t, ctx, f, table)
	mustReady(t, ctx, f, true)
	mustContainAll(t, ctx, f, table)
}

// Adds never make a filter trusted, and do not distrust a trusted one; a
// failed Rebuild leaves it as it was.
func TestFilter_trustComesFromRebuildOnly(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "adds", bloom.Options{Capacity: 10_000, FalsePositiveRate: 0.01, Shards: 3})
	if err := f.AddMany(ctx, keyset("a", 5000)); err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	mustReady(t, ctx, f, false)
	if ok, err := f.MightContain(ctx, "never-added"); err != nil || !ok {
		t.Fatalf("adds only: MightContain = %v, %v; want maybe", ok, err)
	}
	errBoom := errors.New("boom")
	if err := f.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		if err := add([]string{"x"}); err != nil {
			return err
		}
		return errBoom
	}); !errors.Is(err, errBoom) {
		t.Fatalf("Rebuild = %v", err)
	}
	mustReady(t, ctx, f, false)
	fill(t, ctx, f, []string{"x"})
	mustReady(t, ctx, f, true)
	if err := f.AddMany(ctx, keyset("b", 100)); err != nil {
		t.Fatal(err)
	}
	mustReady(t, ctx, f, true)
	if ok, err := f.MightContain(ctx, "never-added"); err != nil || ok {
		t.Fatalf("trusted: MightContain = %v, %v; want absent", ok, err)
	}
	mustContainAll(t, ctx, f, append(keyset("b", 100), "x"))
}

// A failed automatic rebuild is retried by a later check, not before
// RebuildInterval; its lease is released at once.
func TestFilter_autoRebuild_retry(t *testing.T) {
	errBoom := errors.New("database went away")
	source := func(fails int) (bloom.Source, *atomic.Int64) {
		var calls atomic.Int64
		return func(ctx context.Context, add func([]string) error) error {
			if calls.Add(1) <= int64(fails) {
				return errBoom
			}
			return add([]string{"k"})
		}, &calls
	}
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	lease := r.Namespace + ":bf:{retry}:lease"

	t.Run("interval", func(t *testing.T) {
		src, calls := source(1)
		f, done := hooked(t, r.Client, r.Namespace, "retry", bloom.Options{
			Capacity: 100, FalsePositiveRate: 0.01, Source: src, RebuildInterval: time.Hour,
		})
		if ok, err := f.MightContain(ctx, "k"); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := outcome(t, ctx, done); !errors.Is(err, errBoom) {
			t.Fatalf("attempt: %v", err)
		}
		if n, _ := r.Client.Exists(ctx, lease).Result(); n != 0 {
			t.Error("a failed rebuild kept its lease")
		}
		for range 50 { // no hot loop: nothing starts before an hour
			if ok, err := f.MightContain(ctx, "other"); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		mustReady(t, ctx, f, false)
		st, err := f.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if a := bloom.AutoAttempts(f); a != 1 || calls.Load() != 1 || st.AutoRebuildFailures != 1 || st.UntrustedChecks != 51 {
			t.Fatalf("%d attempts, %d Source calls, %+v", a, calls.Load(), st)
		}
	})

	t.Run("retried", func(t *testing.T) {
		src, calls := source(2)
		f, done := hooked(t, r.Client, r.Namespace, "retry", bloom.Options{
			Capacity: 100, FalsePositiveRate: 0.01, Source: src, RebuildInterval: time.Nanosecond,
		})
		// Each check after a failed attempt starts the next one.
		for i := 0; ; i++ {
			if ok, err := f.MightContain(ctx, "k"); err != nil || !ok {
				t.Fatal(ok, err)
			}
			err := outcome(t, ctx, done)
			if err == nil {
				break
			}
			if !errors.Is(err, errBoom) || i > 2 {
				t.Fatalf("attempt %d: %v", i, err)
			}
		}
		mustReady(t, ctx, f, true)
		st, err := f.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 3 || st.AutoRebuildFailures != 2 || st.AutoRebuilds != 1 {
			t.Fatalf("%d Source calls, %+v", calls.Load(), st)
		}
		if ok, err := f.MightContain(ctx, "other"); err != nil || ok {
			t.Fatalf("trusted: MightContain(other) = %v, %v", ok, err)
		}
	})
}

// A process that died holding the lease delays the rebuild until the lease
// expires (here: is deleted), then another process does it.
func TestFilter_autoRebuild_deadLeaseHolder(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	lease := r.Namespace + ":bf:{dead}:lease"
	if err := r.Client.Set(ctx, lease, "a dead process", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	f, done := hooked(t, r.Client, r.Namespace, "dead", bloom.Options{
		Capacity: 100, FalsePositiveRate: 0.01, Source: sliceSource([]string{"k"}, 1), RebuildInterval: time.Nanosecond,
	})
	mustReady(t, ctx, f, false)
	if err := outcome(t, ctx, done); !errors.Is(err, bloom.ErrLeaseHeld) {
		t.Fatalf("attempt under another's lease: %v", err)
	}
	if err := r.Client.Del(ctx, lease).Err(); err != nil { // it expired
		t.Fatal(err)
	}
	mustReady(t, ctx, f, false)
	if err := outcome(t, ctx, done); err != nil {
		t.Fatalf("attempt after the lease expired: %v", err)
	}
	mustReady(t, ctx, f, true)
	if st, err := f.Stats(ctx); err != nil || st.AutoRebuilds != 1 || st.AutoRebuildFailures != 0 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
}

// Close aborts a running automatic rebuild, releases its lease, waits for
// it, and no rebuild starts afterwards.
func TestFilter_Close(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	entered := make(chan struct{})
	f, done := hooked(t, r.Client, r.Namespace, "close", bloom.Options{
		Capacity: 100, FalsePositiveRate: 0.01, RebuildInterval: time.Nanosecond,
		Source: func(ctx context.Context, add func([]string) error) error {
			if err := add([]string{"k"}); err != nil {
				return err
			}
			close(entered)
			<-ctx.Done()
			return ctx.Err()
		},
	})
	mustReady(t, ctx, f, false)
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the Source was not called")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("closed rebuild: %v", err)
		}
	default:
		t.Fatal("Close returned before the rebuild ended")
	}
	if n, _ := r.Client.Exists(ctx, r.Namespace+":bf:{close}:lease").Result(); n != 0 {
		t.Error("Close left the lease")
	}
	st, err := f.Stats(ctx)
	if err != nil || st.Rebuilding || st.UntrustedShards != 1 {
		t.Fatalf("after Close: %+v, %v", st, err)
	}
	mustReady(t, ctx, f, false)
	if n := bloom.AutoAttempts(f); n != 1 {
		t.Fatalf("%d attempts; none may start after Close", n)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestNew_rebuildOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for i, o := range []bloom.Options{
		{RebuildInterval: -1},
		{RebuildLease: -time.Second},
		{RebuildLease: time.Microsecond},
	} {
		o.Capacity, o.FalsePositiveRate = 100, 0.01
		if _, err := bloom.New(c, "f"+strconv.Itoa(i), &o); !errors.Is(err, bloom.ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", o, err)
		}
	}
}
