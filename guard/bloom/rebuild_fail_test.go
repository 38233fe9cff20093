package bloom_test

import (
	"context"
	"errors"
	"testing"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
)

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
			func(err error) bool { return errors.Is(err, bloom.ErrPanic) }},
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
}
