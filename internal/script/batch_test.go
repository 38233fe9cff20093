package script_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/asidekit/asidekit/internal/script"
	"github.com/asidekit/asidekit/testcontainers"
)

// The RunMany calls of a Batch's participants on one client go out in one
// pipeline, once every participant waits or is done; each gets its own
// replies, and a call that fails fails its own participant alone. A
// participant that makes no call (Done) holds nobody back, and a RunMany
// after every participant is done runs at once.
func TestBatch_onePipeline(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := r.NewClient(t)
	var cnt counter
	c.AddHook(&cnt)
	ctx := ctxT(t)
	s := fresh(t, incrBody)
	if err := script.RunMany(ctx, c, incrCalls(s, keysOf(r.Namespace+":warm", 1))); err != nil {
		t.Fatal(err) // the server has s: no NOSCRIPT round trip below
	}
	cnt.take()

	const n = 4 // participants: three that call RunMany, one that does not
	batch, bctx := script.NewBatch(ctx, n)
	keys := keysOf(r.Namespace, 3)
	calls := make([][]script.Call, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		arg := "ok"
		if i == 1 {
			arg = "fail"
		}
		calls[i] = incrCalls(s, keys[i:i+1], arg)
		wg.Go(func() {
			defer batch.Done()
			errs[i] = script.RunMany(bctx, c, calls[i])
		})
	}
	wg.Go(batch.Done)
	wg.Wait()
	if trips, _ := cnt.take(); trips != 1 {
		t.Errorf("three participants' calls took %d round trips, want 1", trips)
	}
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("errors %v; want the failing call's participant alone", errs)
	}
	for _, i := range []int{0, 2} {
		if v, err := calls[i][0].Cmd.Int64(); err != nil || v != 1 {
			t.Errorf("participant %d: reply %d, %v; want its own count 1", i, v, err)
		}
	}
	if err := calls[1][0].Cmd.Err(); err == nil || errors.Is(err, errs[0]) {
		t.Errorf("the failing call's reply: %v", err)
	}

	// Every participant is done: a late call goes at once.
	late := incrCalls(s, keysOf(r.Namespace+":late", 1))
	if err := script.RunMany(bctx, c, late); err != nil {
		t.Fatal(err)
	}
	if trips, _ := cnt.take(); trips != 1 {
		t.Errorf("a late call took %d round trips, want 1", trips)
	}
}

// A participant that calls RunMany twice, one after the other, gets both
// answered: its second call waits only for the participants still open.
func TestBatch_secondCall(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	c := r.NewClient(t)
	ctx := ctxT(t)
	s := fresh(t, incrBody)
	batch, bctx := script.NewBatch(ctx, 2)
	keys := keysOf(r.Namespace, 3)
	var wg sync.WaitGroup
	var first, second, other error
	wg.Go(func() {
		defer batch.Done()
		first = script.RunMany(bctx, c, incrCalls(s, keys[:1]))
		second = script.RunMany(bctx, c, incrCalls(s, keys[1:2]))
	})
	wg.Go(func() {
		defer batch.Done()
		other = script.RunMany(bctx, c, incrCalls(s, keys[2:]))
	})
	wg.Wait()
	if first != nil || second != nil || other != nil {
		t.Fatalf("errors %v, %v, %v", first, second, other)
	}
	for _, k := range keys {
		if n, err := c.Get(ctx, k).Int64(); err != nil || n != 1 {
			t.Errorf("%s = %d, %v; want 1", k, n, err)
		}
	}
}
