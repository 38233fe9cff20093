package bloom_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// tripCounter counts what a client sends: single commands and pipelines,
// each one round trip on a standalone server.
type tripCounter struct {
	cmds, pipes, pipedCmds atomic.Int64
}

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.cmds.Add(1)
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.pipes.Add(1)
		c.pipedCmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func (c *tripCounter) reset() { c.cmds.Store(0); c.pipes.Store(0); c.pipedCmds.Store(0) }

func TestFilter_roundTrips(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := testCtx(t)
	client := redis.NewClient(&redis.Options{Addr: r.Addrs[0]})
	defer client.Close()
	var tc tripCounter
	client.AddHook(&tc)
	f := newFilter(t, client, r.Namespace, "trips", bloom.Options{Capacity: 100_000, FalsePositiveRate: 0.01, Shards: 4})

	elems := keyset("e", 10_000)
	if err := f.AddMany(ctx, elems); err != nil { // also loads the scripts
		t.Fatal(err)
	}
	_, _ = f.MightContain(ctx, "warm") // loads the query script
	if err := f.Add(ctx, "warm"); err != nil {
		t.Fatal(err)
	}

	tc.reset()
	if ok, err := f.MightContain(ctx, elems[7]); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if c, p := tc.cmds.Load(), tc.pipes.Load(); c != 1 || p != 0 {
		t.Errorf("MightContain: %d commands, %d pipelines; want one command", c, p)
	}
	tc.reset()
	if err := f.Add(ctx, "one more"); err != nil {
		t.Fatal(err)
	}
	if c, p := tc.cmds.Load(), tc.pipes.Load(); c != 1 || p != 0 {
		t.Errorf("Add: %d commands, %d pipelines; want one command", c, p)
	}

	// 10,000 keys: two windows of at most 8192, so two pipelines, each
	// with one script call per shard and 128 keys.
	tc.reset()
	got, err := f.MightContainMany(ctx, elems)
	if err != nil || countTrue(got) != len(elems) {
		t.Fatalf("MightContainMany: %d of %d, %v", countTrue(got), len(elems), err)
	}
	if c, p := tc.cmds.Load(), tc.pipes.Load(); c != 0 || p != 2 {
		t.Errorf("MightContainMany(10000): %d commands, %d pipelines; want 2 pipelines", c, p)
	}
	// ceil(n_s/128) calls per shard and window: about 10000/128 + 2·4.
	if n := tc.pipedCmds.Load(); n < 10_000/128 || n > 10_000/128+2*4 {
		t.Errorf("MightContainMany(10000): %d script calls", n)
	}
	tc.reset()
	if err := f.AddMany(ctx, elems[:100]); err != nil {
		t.Fatal(err)
	}
	if c, p := tc.cmds.Load(), tc.pipes.Load(); c != 0 || p != 1 {
		t.Errorf("AddMany(100): %d commands, %d pipelines; want one pipeline", c, p)
	}
}
