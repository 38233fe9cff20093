package cacheaside

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// partitionCut is how long the writer's link is down in
// TestSettle_partitionWindow.
const partitionCut = 2 * time.Second

// What the settle window cannot close, measured: a writer that alone lost
// Redis (a partition of one process; the others kept their links and the
// old entry). Its write returns with the invalidation queued (counted in
// InvalidationsDeferred) and another process reads the old value until
// the retry lands: for as long as the cut lasts, and then for the retry's
// latency. The test checks that latency against the bound the settle
// window is built on (the default SettleWindow: the writer's
// BreakerCooldown, the retrier's longest pause, one try) and logs the
// figures, with the default options.
func TestSettle_partitionWindow(t *testing.T) {
	t.Parallel()
	r := testcontainers.Redis(t)
	reader, writer, wdown := settlePair(t, r, Mutex, nil)
	db := &settleDB{loaded: make(chan struct{})}
	ctx := context.Background()
	if _, err := reader.Get(ctx, "1", db.load); err != nil { // cached: v0
		t.Fatal(err)
	}

	wdown.down.Store(true)
	db.ver.Add(1)
	err := writer.Invalidate(ctx, "1")
	wrote := time.Now()
	if !errors.Is(err, ErrInvalidationPending) {
		t.Fatalf("Invalidate with the link down = %v, want ErrInvalidationPending", err)
	}
	if writer.Stats().InvalidationsDeferred != 1 {
		t.Fatalf("deferred = %d, want 1", writer.Stats().InvalidationsDeferred)
	}
	var healed time.Time
	var lastStale time.Time
	deadline := wrote.Add(partitionCut + time.Minute)
	for {
		if healed.IsZero() && time.Since(wrote) >= partitionCut {
			wdown.down.Store(false)
			healed = time.Now()
		}
		start := time.Now()
		u, err := reader.Get(ctx, "1", db.load)
		if err != nil {
			t.Fatal(err)
		}
		if u.Ver == 0 {
			lastStale = start
		} else if !healed.IsZero() {
			break
		}
		if start.After(deadline) {
			t.Fatal("the old value outlived the cut by a minute")
		}
		time.Sleep(time.Millisecond) // pacing of the reader, not a synchronisation
	}
	window := lastStale.Sub(wrote)
	after := lastStale.Sub(healed)
	t.Logf("link cut %v: the old value was read up to %v after the write returned, %v after the link came back",
		partitionCut, window.Round(time.Millisecond), after.Round(time.Millisecond))
	bound := DefaultBreakerCooldown + settleExtra
	if after > bound {
		t.Fatalf("the retry landed %v after the link came back, beyond the settle window's bound %v", after, bound)
	}
}
