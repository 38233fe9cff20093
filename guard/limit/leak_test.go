package limit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"go.uber.org/goleak"
)

// Wait and Acquire sleep on timers, never on goroutines of their own: none
// is left behind when they return, whichever way they return.
func TestWaitAndAcquire_noGoroutineLeak(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	lim, err := NewGCRA(r.Client, GCRA{Rate: PerMinute(1)}, &Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	sem := newSemaphore(t, r.Client, r.Namespace, Concurrency{Limit: 1, Poll: 10 * time.Millisecond})
	held, err := sem.TryAcquire(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if err := lim.Wait(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	defer goleak.VerifyNone(t, testcontainers.GoleakOptions(goleak.IgnoreCurrent())...)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := lim.Wait(short, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait = %v, want DeadlineExceeded", err)
	}
	if _, err := sem.Acquire(short, "job"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
	}
	canceled, cancel2 := context.WithCancel(ctx)
	cancel2()
	if _, err := sem.TryAcquire(canceled, "job"); !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire(cancelled) = %v, want Canceled", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
