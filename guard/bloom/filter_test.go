package bloom_test

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// checkFalsePositives inserts 20,000 keys at p = 0.01, then asks about
// them (no false negative allowed) and about 20,000 never inserted
// (false-positive rate at most 1.5·p).
func checkFalsePositives(t *testing.T, r *testcontainers.RedisNamespace, shards int) *bloom.Filter {
	t.Helper()
	// 20,000 keys at 1 %: about 200 false positives expected (σ ≈ 14), so
	// the 1.5·p bound sits seven σ above the mean and 0 fourteen σ below.
	const n, p = 20_000, 0.01
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "fp", bloom.Options{Capacity: n, FalsePositiveRate: p, Shards: shards})
	in, out := keyset("in", n), keyset("out", n)
	fill(t, ctx, f, nil) // trusted and empty; AddMany's bits decide
	if err := f.AddMany(ctx, in); err != nil {
		t.Fatalf("AddMany: %v", err)
	}
	mustContainAll(t, ctx, f, in)
	got, err := f.MightContainMany(ctx, out)
	if err != nil {
		t.Fatalf("MightContainMany: %v", err)
	}
	fp := float64(countTrue(got)) / n
	t.Logf("shards=%d: %d false positives in %d never-inserted keys, rate %.4f (target %.2f)", shards, countTrue(got), n, fp, p)
	if fp > 1.5*p {
		t.Errorf("false-positive rate %.4f > 1.5·p = %.4f", fp, 1.5*p)
	}
	if fp == 0 {
		t.Errorf("no false positive at all in %d keys: the filter is far bigger than sized, or not queried", n)
	}
	return f
}

func TestFilter_falsePositiveRate(t *testing.T) {
	t.Parallel() // heavy: overlaps its round trips with the other tests
	checkFalsePositives(t, testcontainers.Redis(t), 0)
}

func TestFilter_falsePositiveRate_cluster(t *testing.T) {
	t.Parallel() // heavy: overlaps its round trips with the other tests
	r := testcontainers.RedisCluster(t)
	const shards = 8
	checkFalsePositives(t, r, shards)

	// The shards really spread over the Cluster's masters.
	cc := r.Client.(*redis.ClusterClient)
	ctx := testCtx(t)
	nodes := map[string]bool{}
	for s := 0; s < shards; s++ {
		key := r.Namespace + ":bf:{fp:" + strconv.Itoa(s) + "}:meta"
		node, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := node.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Fatalf("shard %d meta %s not on %s: %d %v", s, key, node.Options().Addr, n, err)
		}
		nodes[node.Options().Addr] = true
	}
	if len(nodes) < 2 {
		t.Errorf("%d shards all on %v", shards, nodes)
	}
}

func TestFilter_Add_MightContain(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "single", bloom.Options{Capacity: 1000, FalsePositiveRate: 0.001, Shards: 3})
	// A new filter is untrusted: "maybe" for everything.
	if ok, err := f.MightContain(ctx, "a"); err != nil || !ok {
		t.Fatalf("new filter: MightContain = %v, %v; want maybe", ok, err)
	}
	if ready, err := f.Ready(ctx); err != nil || ready {
		t.Fatalf("new filter: Ready = %v, %v", ready, err)
	}
	fill(t, ctx, f, nil)
	for _, k := range []string{"a", "b", "user:42", "{tag}", "with space", strings.Repeat("x", 100_000)} {
		if ok, err := f.MightContain(ctx, k); err != nil || ok {
			t.Fatalf("empty filter: MightContain(%.20q) = %v, %v", k, ok, err)
		}
		if err := f.Add(ctx, k); err != nil {
			t.Fatalf("Add(%.20q): %v", k, err)
		}
		if ok, err := f.MightContain(ctx, k); err != nil || !ok {
			t.Fatalf("after Add: MightContain(%.20q) = %v, %v", k, ok, err)
		}
	}
	// Single and batch calls agree.
	got, err := f.MightContainMany(ctx, []string{"a", "nope-1", "b", "nope-2"})
	if err != nil || !got[0] || !got[2] {
		t.Fatalf("MightContainMany = %v, %v", got, err)
	}
	if got, err := f.MightContainMany(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("MightContainMany(nil) = %v, %v", got, err)
	}
	if err := f.AddMany(ctx, nil); err != nil {
		t.Fatalf("AddMany(nil) = %v", err)
	}
}

func TestFilter_keys(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	// A name that would break a key or a hash tag is escaped.
	f := newFilter(t, r.Client, r.Namespace, "us{er}:x", bloom.Options{Capacity: 100, FalsePositiveRate: 0.01, Shards: 2})
	if err := f.AddMany(ctx, keyset("k", 50)); err != nil {
		t.Fatal(err)
	}
	var found []string
	iter := r.Client.Scan(ctx, 0, r.Namespace+":*", 100).Iterator()
	for iter.Next(ctx) {
		found = append(found, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for s := 0; s < 2; s++ {
		base := r.Namespace + ":bf:{us%7Ber%7D%3Ax:" + strconv.Itoa(s) + "}:"
		want[base+"meta"], want[base+"0"] = true, true
	}
	if len(found) != len(want) {
		t.Fatalf("keys %v, want %v", found, want)
	}
	for _, k := range found {
		if !want[k] {
			t.Errorf("unexpected key %q", k)
		}
	}
	// Delete removes them all.
	if err := f.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := r.Client.Exists(ctx, found...).Result(); n != 0 {
		t.Errorf("%d keys left after Delete", n)
	}
	// A deleted filter is untrusted, not empty: "maybe".
	if ok, err := f.MightContain(ctx, "k-1"); err != nil || !ok {
		t.Errorf("after Delete: MightContain = %v, %v; want maybe", ok, err)
	}
}

func TestFilter_layoutMismatch(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "sized", bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01})
	if err := f.Add(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	other := newFilter(t, r.Client, r.Namespace, "sized", bloom.Options{Capacity: 2000, FalsePositiveRate: 0.01})
	if _, err := other.MightContain(ctx, "x"); !errors.Is(err, bloom.ErrLayoutMismatch) {
		t.Errorf("MightContain with other sizing: %v, want ErrLayoutMismatch", err)
	}
	if err := other.Add(ctx, "y"); !errors.Is(err, bloom.ErrLayoutMismatch) {
		t.Errorf("Add with other sizing: %v, want ErrLayoutMismatch", err)
	}
	if _, err := other.MightContainMany(ctx, []string{"x", "y"}); !errors.Is(err, bloom.ErrLayoutMismatch) {
		t.Errorf("MightContainMany with other sizing: %v, want ErrLayoutMismatch", err)
	}
	if _, err := other.Stats(ctx); !errors.Is(err, bloom.ErrLayoutMismatch) {
		t.Errorf("Stats with other sizing: %v, want ErrLayoutMismatch", err)
	}
	if err := other.Rebuild(ctx, func(context.Context, func([]string) error) error { return nil }); !errors.Is(err, bloom.ErrLayoutMismatch) {
		t.Errorf("Rebuild with other sizing: %v, want ErrLayoutMismatch", err)
	}
	// The original is untouched.
	if ok, err := f.MightContain(ctx, "x"); err != nil || !ok {
		t.Errorf("original filter: %v, %v", ok, err)
	}
}

func TestNew_invalidOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	ok := bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01}
	with := func(mod func(*bloom.Options)) bloom.Options { o := ok; mod(&o); return o }
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		filter string
		opts   bloom.Options
		msg    string
	}{
		{"zero capacity", c, "f", with(func(o *bloom.Options) { o.Capacity = 0 }), "Capacity 0"},
		{"negative capacity", c, "f", with(func(o *bloom.Options) { o.Capacity = -5 }), "Capacity -5"},
		{"zero rate", c, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = 0 }), "(0, 1)"},
		{"rate one", c, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = 1 }), "(0, 1)"},
		{"negative rate", c, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = -0.1 }), "(0, 1)"},
		{"NaN rate", c, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = math.NaN() }), "(0, 1)"},
		{"rate too small", c, "f", with(func(o *bloom.Options) { o.FalsePositiveRate = 1e-30 }), "hash functions"},
		{"negative shards", c, "f", with(func(o *bloom.Options) { o.Shards = -1 }), "Shards -1"},
		{"too many shards", c, "f", with(func(o *bloom.Options) { o.Shards = bloom.MaxShards + 1 }), "Shards"},
		{"shard over 512 MB", c, "f", bloom.Options{Capacity: 1_000_000_000, FalsePositiveRate: 0.01, Shards: 2}, "512 MB"},
		{"filter beyond MaxShards", c, "f", bloom.Options{Capacity: 1 << 50, FalsePositiveRate: 0.01}, "limit is 65536 shards"},
		{"empty name", c, "", ok, "empty"},
		{"long name", c, strings.Repeat("n", 2000), ok, "limit"},
		{"bad namespace", c, "f", with(func(o *bloom.Options) { o.Namespace = "a:b" }), "namespace"},
		{"nil client", nil, "f", ok, "nil Redis client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := bloom.New(tc.client, tc.filter, &tc.opts)
			if !errors.Is(err, bloom.ErrInvalid) || f != nil {
				t.Fatalf("New = %v, %v; want ErrInvalid", f, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
}

func TestFilter_badInput(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	f := newFilter(t, r.Client, r.Namespace, "bad", bloom.Options{Capacity: 100, FalsePositiveRate: 0.01})
	fill(t, ctx, f, nil)

	if err := f.Add(ctx, ""); !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("Add(\"\") = %v", err)
	}
	if _, err := f.MightContain(ctx, ""); !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("MightContain(\"\") = %v", err)
	}
	if err := f.AddMany(ctx, []string{"a", ""}); !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("AddMany with an empty key = %v", err)
	}
	// Nothing of a refused batch was written.
	if ok, _ := f.MightContain(ctx, "a"); ok {
		t.Errorf("AddMany refused the batch but wrote part of it")
	}
	if _, err := f.MightContainMany(ctx, []string{"", "a"}); !errors.Is(err, bloom.ErrEmptyKey) {
		t.Errorf("MightContainMany with an empty key = %v", err)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := f.Add(cancelled, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Add(cancelled) = %v", err)
	}
	if _, err := f.MightContain(cancelled, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("MightContain(cancelled) = %v", err)
	}
	if err := f.AddMany(cancelled, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("AddMany(cancelled) = %v", err)
	}
	if _, err := f.MightContainMany(cancelled, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("MightContainMany(cancelled) = %v", err)
	}
	if _, err := f.Stats(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Stats(cancelled) = %v", err)
	}
	if _, err := f.Ready(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Ready(cancelled) = %v", err)
	}
}

func TestFilter_deadRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there any more
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond})
	defer c.Close()
	ctx := testCtx(t)
	f := newFilter(t, c, "", "dead", bloom.Options{Capacity: 100, FalsePositiveRate: 0.01, Shards: 2})
	if err := f.Add(ctx, "a"); err == nil {
		t.Error("Add on a dead Redis: no error")
	}
	if ok, err := f.MightContain(ctx, "a"); err == nil || ok {
		t.Errorf("MightContain on a dead Redis = %v, %v", ok, err)
	}
	if err := f.AddMany(ctx, keyset("a", 10)); err == nil {
		t.Error("AddMany on a dead Redis: no error")
	}
	if got, err := f.MightContainMany(ctx, keyset("a", 10)); err == nil || got != nil {
		t.Errorf("MightContainMany on a dead Redis = %v, %v", got, err)
	}
	if _, err := f.Stats(ctx); err == nil {
		t.Error("Stats on a dead Redis: no error")
	}
	if ready, err := f.Ready(ctx); err == nil || ready {
		t.Errorf("Ready on a dead Redis = %v, %v", ready, err)
	}
	err = f.Rebuild(ctx, func(context.Context, func([]string) error) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "dead") {
		t.Errorf("Rebuild on a dead Redis = %v", err)
	}
}

// A server that lost its script cache (restart, SCRIPT FLUSH) is served
// by EVAL, in single calls and in pipelines.
func TestFilter_scriptCacheFlushed(t *testing.T) {
	srv := testcontainers.NewRedisServer(t) // private: SCRIPT FLUSH must not hit others
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := testCtx(t)
	f := newFilter(t, c, "", "flush", bloom.Options{Capacity: 10_000, FalsePositiveRate: 0.01, Shards: 4})
	elems := keyset("e", 2000)
	for i := 0; i < 3; i++ {
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := f.AddMany(ctx, elems); err != nil {
			t.Fatalf("AddMany after SCRIPT FLUSH: %v", err)
		}
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		mustContainAll(t, ctx, f, elems)
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := f.MightContain(ctx, elems[0]); err != nil || !ok {
			t.Fatalf("MightContain after SCRIPT FLUSH = %v, %v", ok, err)
		}
	}
}
