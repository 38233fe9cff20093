package bloom_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestNew_badInput(t *testing.T) {
	r := testcontainers.Redis(t)
	ok := bloom.Options{Namespace: r.Namespace, Capacity: 1000, FalsePositiveRate: 0.01}
	with := func(edit func(*bloom.Options)) bloom.Options { o := ok; edit(&o); return o }
	for _, tc := range []struct {
		what   string
		client redis.UniversalClient
		name   string
		opts   bloom.Options
	}{
		{"nil client", nil, "f", ok},
		{"empty name", r.Client, "", ok},
		{"1 MB name", r.Client, strings.Repeat("n", 1<<20), ok},
		{"namespace with a brace", r.Client, "f", with(func(o *bloom.Options) { o.Namespace = "a{b" })},
		{"zero Options", r.Client, "f", bloom.Options{}},
		{"Capacity 0", r.Client, "f", with(func(o *bloom.Options) { o.Capacity = 0 })},
		{"Capacity -1", r.Client, "f", with(func(o *bloom.Options) { o.Capacity = -1 })},
		{"Capacity MaxInt64", r.Client, "f", with(func(o *bloom.Options) { o.Capacity = math.MaxInt64 })},
		{"rate 0", r.Client, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = 0 })},
		{"rate 1", r.Client, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = 1 })},
		{"rate -0.5", r.Client, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = -0.5 })},
		{"rate NaN", r.Client, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = math.NaN() })},
		{"rate +Inf", r.Client, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = math.Inf(1) })},
		{"rate 1e-300 (997 hash functions)", r.Client, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = 1e-300 })},
		{"Shards -1", r.Client, "f", with(func(o *bloom.Options) { o.Shards = -1 })},
		{"Shards above MaxShards", r.Client, "f", with(func(o *bloom.Options) { o.Shards = bloom.MaxShards + 1 })},
		{"one shard past 512 MB", r.Client, "f", with(func(o *bloom.Options) { o.Capacity, o.Shards = 1e10, 1 })},
	} {
		f, err := bloom.New(tc.client, tc.name, &tc.opts)
		if !errors.Is(err, bloom.ErrInvalid) || f != nil {
			t.Errorf("New, %s: %v, %v; want ErrInvalid", tc.what, f, err)
		}
	}
	if ks := nsKeys(t, r); len(ks) != 0 {
		t.Errorf("New wrote %v", ks)
	}
}

// The smallest and largest sizings New accepts work end to end.
func TestNew_extremeSizings(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	for what, o := range map[string]bloom.Options{
		"Capacity 1":        {Capacity: 1, FalsePositiveRate: 0.5},
		"rate near 1":       {Capacity: 10, FalsePositiveRate: 0.9999999999},
		"MaxShards":         {Capacity: 10, FalsePositiveRate: 0.01, Shards: bloom.MaxShards},
		"64 hash functions": {Capacity: 10, FalsePositiveRate: 1e-19},
	} {
		f := newFilter(t, r.Client, r.Namespace, "x", o)
		if err := f.Add(ctx, "e"); err != nil {
			t.Fatalf("%s: Add: %v", what, err)
		}
		if ok, err := f.MightContain(ctx, "e"); !ok || err != nil {
			t.Errorf("%s: MightContain after Add = %v, %v", what, ok, err)
		}
		if st, err := f.Stats(ctx); err != nil || st.BitsSet == 0 {
			t.Errorf("%s: Stats = %+v, %v", what, st, err)
		}
		if err := f.Delete(ctx); err != nil {
			t.Fatalf("%s: Delete: %v", what, err)
		}
		if ks := nsKeys(t, r); len(ks) != 0 {
			t.Fatalf("%s: Delete left %v", what, ks)
		}
	}
}

func nsKeys(t *testing.T, r *testcontainers.RedisNamespace) []string {
	t.Helper()
	ks, err := r.Client.Keys(context.Background(), r.Namespace+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func TestFilter_badInput_elements(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "f", bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01})

	if err := f.Add(ctx, ""); !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("Add(\"\") = %v, want ErrEmptyKey", err)
	}
	if _, err := f.MightContain(ctx, ""); !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("MightContain(\"\") = %v, want ErrEmptyKey", err)
	}
	// A batch with an empty element is refused whole, before anything is
	// written.
	if err := f.AddMany(ctx, []string{"a", "b", ""}); !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("AddMany with an empty element = %v, want ErrEmptyKey", err)
	}
	if got, err := f.MightContainMany(ctx, []string{"a", ""}); !errors.Is(err, bloom.ErrEmptyKey) || got != nil {
		t.Errorf("MightContainMany with an empty element = %v, %v; want ErrEmptyKey", got, err)
	}
	if ks := nsKeys(t, r); len(ks) != 0 {
		t.Errorf("refused calls wrote %v", ks)
	}
	// Empty batches are no calls at all.
	if err := f.AddMany(ctx, nil); err != nil {
		t.Errorf("AddMany(nil) = %v", err)
	}
	if got, err := f.MightContainMany(ctx, []string{}); err != nil || len(got) != 0 {
		t.Errorf("MightContainMany([]) = %v, %v", got, err)
	}
	// Elements are hashed, never used as keys: any length works.
	huge := strings.Repeat("e", 1<<20)
	if err := f.AddMany(ctx, []string{huge}); err != nil {
		t.Fatalf("AddMany(1 MB element) = %v", err)
	}
	if got, err := f.MightContainMany(ctx, []string{huge, huge[1:]}); err != nil || !got[0] {
		t.Errorf("MightContainMany(1 MB element) = %v, %v", got, err)
	}
}

func TestFilter_badInput_cancelledContext(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	f := newFilter(t, r.Client, r.Namespace, "f", bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01, Shards: 2})
	fill(t, ctx, f, []string{"kept"})
	before := nsKeys(t, r)

	for op, err := range map[string]error{
		"Add":              f.Add(cancelled, "new"),
		"AddMany":          f.AddMany(cancelled, []string{"new"}),
		"MightContain":     func() error { _, err := f.MightContain(cancelled, "kept"); return err }(),
		"MightContainMany": func() error { _, err := f.MightContainMany(cancelled, []string{"kept"}); return err }(),
		"Delete":           f.Delete(cancelled),
		"Stats":            func() error { _, err := f.Stats(cancelled); return err }(),
		"Ready":            func() error { _, err := f.Ready(cancelled); return err }(),
		"Rebuild":          f.Rebuild(cancelled, sliceSource([]string{"new"}, 1)),
	} {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s(cancelled) = %v, want context.Canceled", op, err)
		}
	}
	if after := nsKeys(t, r); len(after) != len(before) {
		t.Errorf("keys %v became %v", before, after)
	}
	if ok, err := f.MightContain(ctx, "kept"); !ok || err != nil {
		t.Errorf("MightContain(kept) after the cancelled calls = %v, %v", ok, err)
	}
	if ok, _ := f.MightContain(ctx, "new"); ok {
		t.Error("a cancelled call added an element")
	}
}

func TestFilter_badInput_deadRedis(t *testing.T) {
	ctx := testCtx(t)
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	defer dead.Close()
	f, err := bloom.New(dead, "d", &bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01, Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	for op, err := range map[string]error{
		"Add":              f.Add(ctx, "x"),
		"AddMany":          f.AddMany(ctx, []string{"x", "y"}),
		"MightContain":     func() error { _, err := f.MightContain(ctx, "x"); return err }(),
		"MightContainMany": func() error { _, err := f.MightContainMany(ctx, []string{"x"}); return err }(),
		"Delete":           f.Delete(ctx),
		"Stats":            func() error { _, err := f.Stats(ctx); return err }(),
		"Ready":            func() error { _, err := f.Ready(ctx); return err }(),
		"Rebuild":          f.Rebuild(ctx, sliceSource([]string{"x"}, 1)),
	} {
		if err == nil || !strings.Contains(err.Error(), `filter "d"`) || errors.Is(err, bloom.ErrLayoutMismatch) ||
			errors.Is(err, bloom.ErrEmptyKey) || errors.Is(err, bloom.ErrRebuildSuperseded) {
			t.Errorf("%s on a dead Redis = %v, want the connection error, naming the filter", op, err)
		}
	}
}

// A Source that ignores add's error must not make the rebuild switch to a
// generation without the failed batch: those keys would read as absent.
func TestFilter_Rebuild_sourceIgnoresAddError(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	const name, shards = "ignore", 2
	f := newFilter(t, r.Client, r.Namespace, name, bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01, Shards: shards})
	before := keyset("before", 200)
	if err := f.AddMany(ctx, before); err != nil {
		t.Fatal(err)
	}
	err := f.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		_ = add(append(before[:100:100], "")) // refused: the empty key
		_ = add(before[100:])
		return nil
	})
	if !errors.Is(err, bloom.ErrEmptyKey) {
		t.Fatalf("Rebuild whose Source ignored a failed add = %v, want that add's error", err)
	}
	checkAborted(t, ctx, r, f, name, shards, before)
}

func TestNew_nilOptions(t *testing.T) {
	r := testcontainers.Redis(t)
	if _, err := bloom.New(r.Client, "f", nil); !errors.Is(err, bloom.ErrInvalid) {
		t.Fatalf("New with nil Options = %v, want ErrInvalid", err)
	}
}
