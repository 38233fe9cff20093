package bloom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
)

// Distrust turns a complete filter into one that answers "maybe" for
// every key, bits kept, until a Rebuild; on a filter with no keys in Redis
// it creates none.
func TestFilter_Distrust(t *testing.T) {
	t.Parallel()
	checkDistrust(t, testcontainers.Redis(t))
}

func TestFilter_Distrust_cluster(t *testing.T) {
	t.Parallel()
	checkDistrust(t, testcontainers.RedisCluster(t))
}

func checkDistrust(t *testing.T, r *testcontainers.RedisNamespace) {
	ctx := testCtx(t)
	const shards = 3
	opts := bloom.Options{Capacity: 10_000, FalsePositiveRate: 0.001, Shards: shards}

	fresh := newFilter(t, r.Client, r.Namespace, "never", opts)
	if err := fresh.Distrust(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := fresh.Stats(ctx); err != nil || st.Generation != 0 || st.BitsSet != 0 {
		t.Fatalf("Distrust of a filter never written wrote to it: %+v, %v", st, err)
	}

	f := newFilter(t, r.Client, r.Namespace, "d", opts)
	table := keyset("row", 1000)
	fill(t, ctx, f, table)
	mustReady(t, ctx, f, true)
	if ok, err := f.MightContain(ctx, "lost-with-the-reply"); err != nil || ok {
		t.Fatalf("trusted: MightContain = %v, %v; want absent", ok, err)
	}
	if err := f.Distrust(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.MightContain(ctx, "lost-with-the-reply"); err != nil || !ok {
		t.Fatalf("distrusted: MightContain = %v, %v; want maybe", ok, err)
	}
	st, err := f.Stats(ctx)
	if err != nil || st.UntrustedShards != shards || st.BitsSet == 0 {
		t.Fatalf("distrusted: Stats = %+v, %v; want %d untrusted shards, bits kept", st, err, shards)
	}
	mustContainAll(t, ctx, f, table)
	if err := f.Distrust(ctx); err != nil { // again: harmless
		t.Fatal(err)
	}
	fill(t, ctx, f, append(table, "lost-with-the-reply"))
	mustReady(t, ctx, f, true)
	mustContainAll(t, ctx, f, append(table, "lost-with-the-reply"))
}

// A rebuild under way when Distrust runs may have read its source before
// the key that was never added: it is superseded, and the filter stays
// untrusted instead of being marked complete without the key.
func TestFilter_Distrust_supersedesRebuild(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "dr", bloom.Options{Capacity: 10_000, FalsePositiveRate: 0.001, Shards: 2})
	fill(t, ctx, f, keyset("old", 100))
	read, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- f.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
			if err := add(keyset("row", 100)); err != nil {
				return err
			}
			close(read) // the source is read: a key inserted now is not in it
			<-release
			return nil
		})
	}()
	<-read
	if err := f.Distrust(ctx); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; !errors.Is(err, bloom.ErrRebuildSuperseded) {
		t.Fatalf("Rebuild after Distrust = %v, want ErrRebuildSuperseded", err)
	}
	mustReady(t, ctx, f, false)
	if ok, err := f.MightContain(ctx, "inserted-after-the-read"); err != nil || !ok {
		t.Fatalf("MightContain = %v, %v; want maybe", ok, err)
	}
}

// With Options.Source, Distrust starts the automatic rebuild, which puts
// the key nobody added back in from the source.
func TestFilter_Distrust_autoRebuild(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	table := keyset("row", 500)
	opts := bloom.Options{
		Capacity: 10_000, FalsePositiveRate: 0.001, Shards: 2,
		RebuildInterval: time.Nanosecond, // every check may start one
		Source:          func(ctx context.Context, add func([]string) error) error { return sliceSource(table, 100)(ctx, add) },
	}
	f, done := hooked(t, r.Client, r.Namespace, "da", opts)
	if err := f.Rebuild(ctx, sliceSource(table[:400], 100)); err != nil { // complete but for the last 100
		t.Fatal(err)
	}
	mustReady(t, ctx, f, true)
	if err := f.Distrust(ctx); err != nil {
		t.Fatal(err)
	}
	if err := outcome(t, ctx, done); err != nil {
		t.Fatalf("automatic rebuild after Distrust: %v", err)
	}
	mustReady(t, ctx, f, true)
	mustContainAll(t, ctx, f, table)
}
