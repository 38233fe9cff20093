package limit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestGCRA_Wait_twentyCallers(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// 10 calls per second, one at a time: the 20th call comes 1.9 s after
	// the first.
	build := func() Limiter {
		lim, err := NewGCRA(r.NewClient(t), GCRA{Rate: PerSecond(10), Burst: 1}, &Options{Namespace: r.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	lims := []Limiter{build(), build()}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() { errs[i] = lims[i%2].Wait(ctx, "api") })
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, err := range errs {
		if err != nil {
			t.Errorf("caller %d: Wait = %v, want nil", i, err)
		}
	}
	// The lower bound is the limiter's promise; the upper one only says
	// "about 2 s" generously, for a loaded machine.
	if elapsed < 1800*time.Millisecond || elapsed > 8*time.Second {
		t.Fatalf("20 Waits on 10/s took %v, want about 1.9 s", elapsed)
	}
	// All 20 were counted: the bucket is empty.
	res, err := lims[0].Allow(ctx, "api")
	if err != nil || res.Allowed {
		t.Fatalf("Allow after the 20 Waits = %+v, %v; want refused", res, err)
	}
	t.Logf("20 Waits took %v", elapsed)
}

func TestLimiter_Wait_context(t *testing.T) {
	r := testcontainers.Redis(t)
	lim, err := NewGCRA(r.Client, GCRA{Rate: PerMinute(1)}, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := lim.Wait(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// The next call is a minute away: a deadline before that ends Wait at
	// once.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := lim.Wait(short, "k"); !errors.Is(err, ErrLimited) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with a deadline before the next slot = %v; want ErrLimited and DeadlineExceeded", err)
	}
	if short.Err() != nil {
		t.Fatal("Wait slept until the deadline instead of returning at once")
	}
	// Cancelling ends a Wait that sleeps.
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- lim.Wait(cctx, "k") }()
	time.Sleep(50 * time.Millisecond)
	ccancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after its context was cancelled")
	}
}
