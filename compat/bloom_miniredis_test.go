package compat_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/bloom"
)

// The embedded backend of the demo CLI (miniredis, which has no BITFIELD)
// runs every script: add, query, rebuild (begin, fill, switch, abort),
// stats, and the layout check.
func TestFilter_miniredis(t *testing.T) {
	t.Parallel() // heavy: overlaps its round trips with the other tests
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	ctx := testCtx(t)
	opts := bloom.Options{Capacity: 2000, FalsePositiveRate: 0.01, Shards: 3}
	f := newFilter(t, c, "", "mini", opts)

	in, out := keyset("in", 600), keyset("out", 600)
	// A new filter answers "maybe" until a rebuild made it complete.
	if err := f.Rebuild(ctx, sliceSource(in[:300], 100)); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	if err := f.AddMany(ctx, in[300:]); err != nil {
		t.Fatalf("AddMany: %v", err)
	}
	if err := f.Add(ctx, "one"); err != nil {
		t.Fatalf("Add: %v", err)
	}
	mustContainAll(t, ctx, f, append(in, "one"))
	if ok, err := f.MightContain(ctx, "one"); err != nil || !ok {
		t.Fatalf("MightContain = %v, %v", ok, err)
	}
	got, err := f.MightContainMany(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	if c := countTrue(got); c > 30 { // 600 at a fill far below capacity
		t.Errorf("%d false positives of %d", c, len(out))
	}

	if err := f.Rebuild(ctx, sliceSource(out, 200)); err != nil {
		t.Fatalf("Rebuild: %v", err)
	}
	mustContainAll(t, ctx, f, out)
	errBoom := errors.New("boom")
	err = f.Rebuild(ctx, func(_ context.Context, add func([]string) error) error {
		if err := add(in); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("failed Rebuild = %v", err)
	}
	mustContainAll(t, ctx, f, out)

	st, err := f.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.Generation != 2 || st.Rebuilding || st.BitsSet == 0 || st.EstimatedCount < 570 || st.EstimatedCount > 630 {
		t.Errorf("Stats = %+v", st)
	}
	// The old generation and the aborted one are gone: 3 meta + 3 bitmaps.
	if keys := mr.Keys(); len(keys) != 6 {
		t.Errorf("keys %v", keys)
	}

	other := newFilter(t, c, "", "mini", bloom.Options{Capacity: 3000, FalsePositiveRate: 0.01, Shards: 3})
	if _, err := other.MightContain(ctx, "one"); !errors.Is(err, bloom.ErrLayoutMismatch) {
		t.Errorf("other sizing on miniredis = %v", err)
	}
}

// The helpers below are copies of guard/bloom's test helpers.

// testCtx is a context that ends with the test, bounded so a hang fails.
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newFilter(t testing.TB, c redis.UniversalClient, ns, name string, opts bloom.Options) *bloom.Filter {
	t.Helper()
	opts.Namespace = ns
	f, err := bloom.New(c, name, &opts)
	if err != nil {
		t.Fatalf("New(%q, %+v): %v", name, opts, err)
	}
	return f
}

// keyset returns n distinct element names.
func keyset(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// mustContainAll fails the test if any of elems reads as absent.
func mustContainAll(t testing.TB, ctx context.Context, f *bloom.Filter, elems []string) {
	t.Helper()
	got, err := f.MightContainMany(ctx, elems)
	if err != nil {
		t.Fatalf("MightContainMany: %v", err)
	}
	for i, ok := range got {
		if !ok {
			t.Fatalf("false negative: %q (and %d more)", elems[i], len(elems)-countTrue(got)-1)
		}
	}
}

// sliceSource is a rebuild Source that feeds elems in batches of size.
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
