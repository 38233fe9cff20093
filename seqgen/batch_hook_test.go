package seqgen_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/seqgen"
)

// nextHook watches a client's next.lua calls (EVALSHA; warm the script
// with one call first): it counts them, records the largest batch asked
// for, and, armed, holds each one until the test releases it, or runs each
// one twice as a client retry after a lost reply would.
type nextHook struct {
	calls   atomic.Int64
	maxN    atomic.Int64
	hold    atomic.Bool
	replay  atomic.Bool
	entered chan struct{} // a held call has arrived
	release chan struct{} // lets one held call go on
}

func newNextHook() *nextHook {
	return &nextHook{entered: make(chan struct{}), release: make(chan struct{})}
}

func (h *nextHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *nextHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 7 || fmt.Sprint(args[0]) != "evalsha" || fmt.Sprint(args[1]) != seqgen.NextScriptHash {
			return next(ctx, cmd)
		}
		h.calls.Add(1)
		if n, err := strconv.ParseInt(fmt.Sprint(args[6]), 10, 64); err == nil {
			for m := h.maxN.Load(); n > m && !h.maxN.CompareAndSwap(m, n); m = h.maxN.Load() {
			}
		}
		if h.hold.Load() {
			h.entered <- struct{}{}
			<-h.release
		}
		err := next(ctx, cmd)
		if err == nil && h.replay.Load() {
			err = next(ctx, cmd) // the script ran; its reply "lost"
		}
		return err
	}
}
func (h *nextHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// hookedGen returns a generator on a client of its own that h watches, and
// warms next.lua (one Next) so that every call is an EVALSHA.
func (e *env) hookedGen(t *testing.T, h *nextHook, edit func(*seqgen.Options)) *seqgen.Generator {
	t.Helper()
	client := e.r.NewClient(t)
	client.AddHook(h)
	g := newGen(t, client, e.pg.DB, e.opts(edit))
	mustNext(t, g, "WARM")
	h.calls.Store(0)
	return g
}

// waitQueued waits until n Next calls of g wait for a script call.
func waitQueued(t *testing.T, g *seqgen.Generator, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a guard, not the test
	for seqgen.Queued(g) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", seqgen.Queued(g), n)
		}
		waitABit()
	}
}

// result is one Next call's outcome.
type result struct {
	s   string
	err error
}

// goNext calls g.Next(ctx, biz) on a goroutine; its result arrives on the
// channel.
func goNext(ctx context.Context, g *seqgen.Generator, biz string) <-chan result {
	c := make(chan result, 1)
	go func() {
		s, err := g.Next(ctx, biz)
		c <- result{s, err}
	}()
	return c
}
