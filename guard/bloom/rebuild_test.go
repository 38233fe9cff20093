package bloom_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// sliceSource streams elems in batches of size.
func sliceSource(elems []string, size int) bloom.Source {
	return func(ctx context.Context, add func([]string) error) error {
		for i := 0; i < len(elems); i += size {
			if err := add(elems[i:min(i+size, len(elems))]); err != nil {
				return err
			}
		}
		return nil
	}
}

// shardKeys returns the three keys of shard s of filter name.
func shardKeys(ns, name string, s int) (meta, buf0, buf1 string) {
	base := ns + ":bf:{" + name + ":" + strconv.Itoa(s) + "}:"
	return base + "meta", base + "0", base + "1"
}

// checkRebuildUnderReaders rebuilds a filter while 8 goroutines query keys
// that are in it and in the source, and one more adds new keys:
// no query may ever answer false for them.
func checkRebuildUnderReaders(t *testing.T, r *testcontainers.RedisNamespace) {
	const (
		name    = "rb"
		shards  = 4
		readers = 8
		n       = 5000
	)
	ctx := testCtx(t)
	opts := bloom.Options{Capacity: 100_000, FalsePositiveRate: 0.01, Shards: shards}
	f := newFilter(t, r.Client, r.Namespace, name, opts)
	kept := keyset("kept", n)     // in the filter and in the source
	stale := keyset("stale", n)   // in the filter, not in the source
	fresh := keyset("fresh", n)   // only in the source
	added := keyset("added", n/5) // added by a writer during the rebuild
	if err := f.AddMany(ctx, append(append([]string{}, kept...), stale...)); err != nil {
		t.Fatal(err)
	}

	var (
		rounds atomic.Int64 // reader queries done
		falseN atomic.Int64 // false negatives seen
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		errs   = make(chan error, readers+1)
	)
	for i := 0; i < readers; i++ {
		// Each reader is a separate Filter on its own client, as another
		// process would be.
		rf := newFilter(t, r.NewClient(t), r.Namespace, name, opts)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Readers take turns over windows of kept, so that every key is
			// asked many times.
			for q := i; ; q++ {
				select {
				case <-stop:
					return
				default:
				}
				win := kept[(q*500)%n : (q*500)%n+500]
				got, err := rf.MightContainMany(ctx, win)
				if err != nil {
					errs <- err
					return
				}
				falseN.Add(int64(len(win) - countTrue(got)))
				if ok, err := rf.MightContain(ctx, win[q%len(win)]); err != nil || !ok {
					falseN.Add(1)
				}
				rounds.Add(1)
			}
		}(i)
	}
	// The writer starts once Rebuild has begun on every shard (when the
	// source is first called): a key added before that and not in the
	// source is rightly dropped by the rebuild.
	var addedN atomic.Int64
	begun := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		wf := newFilter(t, r.NewClient(t), r.Namespace, name, opts)
		select {
		case <-begun:
		case <-stop:
			return
		}
		for _, k := range added {
			select {
			case <-stop:
				return
			default:
			}
			if err := wf.Add(ctx, k); err != nil {
				errs <- err
				return
			}
			addedN.Add(1)
		}
	}()

	// wait blocks until the readers have run target rounds and the writer
	// has added wantAdded keys (or has added all it has).
	wait := func(ctx context.Context, target, wantAdded int64) error {
		wantAdded = min(wantAdded, int64(len(added)))
		for rounds.Load() < target || addedN.Load() < wantAdded {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case err := <-errs:
				return err
			case <-time.After(time.Millisecond):
			}
		}
		return nil
	}

	// The source waits, after each batch, until every reader has run about
	// one more round and the writer has added one more key: readers and
	// writer are sure to work throughout the fill, however slow the machine.
	source := append(append([]string{}, kept...), fresh...)
	var batches int
	src := func(ctx context.Context, add func([]string) error) error {
		close(begun)
		for i := 0; i < len(source); i += 1000 {
			if err := add(source[i:min(i+1000, len(source))]); err != nil {
				return err
			}
			batches++
			if err := wait(ctx, rounds.Load()+readers, addedN.Load()+1); err != nil {
				return err
			}
		}
		return nil
	}
	start := rounds.Load()
	if err := f.Rebuild(ctx, src); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	during, addedDuring := rounds.Load()-start, addedN.Load()
	// A few more rounds on the new generation.
	if err := wait(ctx, rounds.Load()+readers, addedDuring+1); err != nil {
		t.Fatalf("after the rebuild: %v", err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("reader or writer: %v", err)
	}
	t.Logf("%d batches, %d reader rounds and %d adds during the rebuild, %d adds in all", batches, during, addedDuring, addedN.Load())
	if during < int64(batches*readers) || addedDuring < int64(batches) {
		t.Fatalf("only %d reader rounds and %d adds during the rebuild", during, addedDuring)
	}
	if fn := falseN.Load(); fn != 0 {
		t.Fatalf("%d false negatives during the rebuild", fn)
	}

	// After: the source's keys and the ones added meanwhile are in; the
	// stale ones are gone (up to false positives).
	mustContainAll(t, ctx, f, kept)
	mustContainAll(t, ctx, f, fresh)
	mustContainAll(t, ctx, f, added[:addedN.Load()])
	got, err := f.MightContainMany(ctx, stale)
	if err != nil {
		t.Fatal(err)
	}
	if c := countTrue(got); c > n/20 {
		t.Errorf("%d of %d stale keys still read as present after the rebuild", c, n)
	}
	st, err := f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Generation != 1 || st.Rebuilding {
		t.Errorf("after the rebuild: generation %d, rebuilding %v", st.Generation, st.Rebuilding)
	}
	// The old generation (buffer 0) is deleted; the new one is buffer 1.
	for s := 0; s < shards; s++ {
		_, buf0, buf1 := shardKeys(r.Namespace, name, s)
		if n, _ := r.Client.Exists(ctx, buf0).Result(); n != 0 {
			t.Errorf("old generation %s still exists", buf0)
		}
		if n, _ := r.Client.Exists(ctx, buf1).Result(); n != 1 {
			t.Errorf("new generation %s missing", buf1)
		}
	}
}

func TestFilter_Rebuild_concurrentReaders(t *testing.T) {
	t.Parallel() // heavy: overlaps its round trips with the other tests
	checkRebuildUnderReaders(t, testcontainers.Redis(t))
}

func TestFilter_Rebuild_concurrentReaders_cluster(t *testing.T) {
	t.Parallel() // heavy: overlaps its round trips with the other tests
	checkRebuildUnderReaders(t, testcontainers.RedisCluster(t))
}

// Two rebuilds in a row: generations alternate buffers and each rebuild
// reflects its own source.
func TestFilter_Rebuild_twice(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "twice", bloom.Options{Capacity: 10_000, FalsePositiveRate: 0.001, Shards: 2})
	a, b := keyset("a", 2000), keyset("b", 2000)
	if err := f.Rebuild(ctx, sliceSource(a, 300)); err != nil {
		t.Fatal(err)
	}
	mustContainAll(t, ctx, f, a)
	if err := f.Rebuild(ctx, sliceSource(b, 300)); err != nil {
		t.Fatal(err)
	}
	mustContainAll(t, ctx, f, b)
	got, _ := f.MightContainMany(ctx, a)
	if c := countTrue(got); c > 20 {
		t.Errorf("%d of %d keys of the previous source still present", c, len(a))
	}
	st, err := f.Stats(ctx)
	if err != nil || st.Generation != 2 {
		t.Errorf("Stats = %+v, %v; want generation 2", st, err)
	}
	// An empty source empties the filter.
	if err := f.Rebuild(ctx, sliceSource(nil, 1)); err != nil {
		t.Fatal(err)
	}
	if st, err := f.Stats(ctx); err != nil || st.BitsSet != 0 || st.Generation != 3 {
		t.Errorf("after an empty rebuild: %+v, %v", st, err)
	}
}

// checkAborted asserts that a failed rebuild left the filter as it was:
// current generation 0 with its keys, no rebuild token, no next buffer.
func checkAborted(t *testing.T, ctx context.Context, r *testcontainers.RedisNamespace, f *bloom.Filter, name string, shards int, before []string) {
	t.Helper()
	mustContainAll(t, ctx, f, before)
	st, err := f.Stats(ctx)
	if err != nil || st.Generation != 0 || st.Rebuilding {
		t.Errorf("after a failed rebuild: %+v, %v", st, err)
	}
	for s := 0; s < shards; s++ {
		_, _, buf1 := shardKeys(r.Namespace, name, s)
		if n, _ := r.Client.Exists(ctx, buf1).Result(); n != 0 {
			t.Errorf("the aborted generation %s was not deleted", buf1)
		}
	}
	// Adds no longer write a next generation.
	if err := f.Add(ctx, "after-abort"); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < shards; s++ {
		_, _, buf1 := shardKeys(r.Namespace, name, s)
		if n, _ := r.Client.Exists(ctx, buf1).Result(); n != 0 {
			t.Errorf("an Add after the abort wrote %s", buf1)
		}
	}
}

func TestFilter_Rebuild_sourceFails(t *testing.T) {
	errBoom := errors.New("database went away")
	for _, tc := range []struct {
		name  string
		fail  func(ctx context.Context, cancel context.CancelFunc) error
		check func(error) bool
	}{
		{"error", func(context.Context, context.CancelFunc) error { return errBoom },
			func(err error) bool { return errors.Is(err, errBoom) }},
		{"panic", func(context.Context, context.CancelFunc) error { panic("source bug") },
			func(err error) bool { return errors.Is(err, bloom.ErrSourcePanicked) }},
		{"cancelled", func(ctx context.Context, cancel context.CancelFunc) error { cancel(); return ctx.Err() },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
		{"cancelled, source ignores it", func(_ context.Context, cancel context.CancelFunc) error { cancel(); return nil },
			func(err error) bool { return errors.Is(err, context.Canceled) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testcontainers.Redis(t)
			ctx := testCtx(t)
			const name, shards = "fail", 3
			f := newFilter(t, r.Client, r.Namespace, name, bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01, Shards: shards})
			before := keyset("before", 300)
			if err := f.AddMany(ctx, before); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithCancel(ctx)
			defer cancel()
			err := f.Rebuild(rctx, func(ctx context.Context, add func([]string) error) error {
				if err := add(keyset("new", 100)); err != nil {
					return err
				}
				return tc.fail(ctx, cancel)
			})
			if err == nil || !tc.check(err) {
				t.Fatalf("Rebuild = %v", err)
			}
			t.Logf("Rebuild: %v", err)
			checkAborted(t, ctx, r, f, name, shards, before)
		})
	}
}

// A rebuild that a newer one takes over stops with ErrRebuildSuperseded,
// and the newer one's result stands.
func TestFilter_Rebuild_superseded(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	const name = "super"
	opts := bloom.Options{Capacity: 10_000, FalsePositiveRate: 0.01, Shards: 4}
	first := newFilter(t, r.Client, r.Namespace, name, opts)
	second := newFilter(t, r.NewClient(t), r.Namespace, name, opts)
	old, newer := keyset("old", 1000), keyset("newer", 1000)
	if err := first.AddMany(ctx, old); err != nil {
		t.Fatal(err)
	}
	var addErr error
	err := first.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		if err := add(keyset("first", 500)); err != nil {
			return err
		}
		// Another process rebuilds meanwhile, to the end.
		if err := second.Rebuild(ctx, sliceSource(newer, 200)); err != nil {
			t.Errorf("second Rebuild: %v", err)
		}
		addErr = add(keyset("first-more", 500))
		return addErr
	})
	if !errors.Is(addErr, bloom.ErrRebuildSuperseded) || !errors.Is(err, bloom.ErrRebuildSuperseded) {
		t.Fatalf("first Rebuild = %v (add: %v), want ErrRebuildSuperseded", err, addErr)
	}
	mustContainAll(t, ctx, first, newer)
	st, err := first.Stats(ctx)
	if err != nil || st.Generation != 1 || st.Rebuilding {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
	got, _ := first.MightContainMany(ctx, keyset("first-more", 500))
	if c := countTrue(got); c > 25 {
		t.Errorf("%d keys of the superseded rebuild leaked into the filter", c)
	}

	// A source that ignores add's error is still stopped at the switch.
	third := newFilter(t, r.NewClient(t), r.Namespace, name, opts)
	err = first.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		_ = add(keyset("x", 10))
		if err := third.Rebuild(ctx, sliceSource(newer, 500)); err != nil {
			t.Errorf("third Rebuild: %v", err)
		}
		_ = add(keyset("y", 10)) // fails; the source does not care
		return nil
	})
	if !errors.Is(err, bloom.ErrRebuildSuperseded) {
		t.Fatalf("Rebuild whose source ignored the takeover = %v", err)
	}
	mustContainAll(t, ctx, first, newer)
	if st, err := first.Stats(ctx); err != nil || st.Generation != 2 || st.Rebuilding {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
}

// A rebuild that died (process killed) leaves its token; the next
// Rebuild takes over and finishes.
func TestFilter_Rebuild_takesOverDeadRebuild(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	const name, shards = "dead", 2
	f := newFilter(t, r.Client, r.Namespace, name, bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01, Shards: shards})
	a := keyset("a", 200)
	if err := f.AddMany(ctx, a); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < shards; s++ {
		meta, _, buf1 := shardKeys(r.Namespace, name, s)
		r.Client.HSet(ctx, meta, "rebuild", "dead-token")
		r.Client.SetBit(ctx, buf1, 5, 1) // a half-filled generation
	}
	if st, err := f.Stats(ctx); err != nil || !st.Rebuilding {
		t.Fatalf("Stats = %+v, %v; want Rebuilding", st, err)
	}
	if err := f.Rebuild(ctx, sliceSource(a, 50)); err != nil {
		t.Fatal(err)
	}
	mustContainAll(t, ctx, f, a)
	if st, err := f.Stats(ctx); err != nil || st.Rebuilding || st.Generation != 1 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
}

func TestFilter_Rebuild_badUse(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "use", bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01})
	if err := f.Rebuild(ctx, nil); err == nil {
		t.Error("Rebuild(nil source): no error")
	}
	// add kept past the end of Rebuild fails instead of writing.
	var kept func([]string) error
	if err := f.Rebuild(ctx, func(_ context.Context, add func([]string) error) error { kept = add; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := kept([]string{"late"}); err == nil {
		t.Error("add after Rebuild returned: no error")
	}
	if ok, _ := f.MightContain(ctx, "late"); ok {
		t.Error("a late add reached the filter")
	}
	// An empty key in the source fails the rebuild.
	err := f.Rebuild(ctx, sliceSource([]string{"a", ""}, 10))
	if !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("Rebuild with an empty key = %v", err)
	}
	var _ redis.UniversalClient = r.Client
}
