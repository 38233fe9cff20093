package bloom_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
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
