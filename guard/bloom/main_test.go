package bloom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

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

// fill makes f trusted with exactly elems in it: a Rebuild from them, the
// only way a filter becomes complete.
func fill(t testing.TB, ctx context.Context, f *bloom.Filter, elems []string) {
	t.Helper()
	if err := f.Rebuild(ctx, sliceSource(elems, 1000)); err != nil {
		t.Fatalf("Rebuild (fill): %v", err)
	}
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
