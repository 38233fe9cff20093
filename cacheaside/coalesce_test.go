package cacheaside

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// getHook counts the GETs a client sends. With gate set, the first GET is
// held after Redis has answered it (reached is closed then) until gate is
// closed: a slow read whose value is already decided.
type getHook struct {
	gets    atomic.Int64
	reached chan struct{}
	gate    chan struct{}
}

func (h *getHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *getHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "get" {
			return next(ctx, cmd)
		}
		n := h.gets.Add(1)
		err := next(ctx, cmd)
		if n == 1 && h.gate != nil {
			close(h.reached)
			<-h.gate
		}
		return err
	}
}
func (h *getHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// coalesced returns an entity over a client counting its GETs; hold makes
// the hook hold the first GET.
func coalesced(t *testing.T, hold bool, p Policy) (*Entity[user], *getHook) {
	t.Helper()
	r := testcontainers.Redis(t)
	client := r.NewClient(t)
	h := &getHook{}
	if hold {
		h.reached, h.gate = make(chan struct{}), make(chan struct{})
	}
	client.AddHook(h)
	return newEntity[user](t, newCache(t, client, r.Namespace, nil), "user", p), h
}

type getResult struct {
	u   user
	err error
}

func goGet(ctx context.Context, e *Entity[user], id string) chan getResult {
	ch := make(chan getResult, 1)
	go func() {
		u, err := e.Get(ctx, id, (&counter{}).load)
		ch <- getResult{u, err}
	}()
	return ch
}

// waitQueued waits until n callers are queued for the next GET of id.
func waitQueued(t *testing.T, e *Entity[user], id string, n int) {
	t.Helper()
	key, _ := e.Key(id)
	waitFor(t, 10*time.Second, func() bool { return e.reads.waiting(key) == n })
}

// 64 goroutines reading one hot key share GETs, every read correct. First
// a round made to overlap: the first GET is held until the 63 other
// readers are queued, and all of them share the next GET (2 GETs for 64
// reads). Then 64 goroutines read 50 times each, free-running: how many
// GETs they share depends on the scheduler (0.07 per read on an idle
// machine, 0.27 with both cores busy), so only "fewer GETs than reads"
// is asserted; without coalescing every read sends its own GET.
func TestCoalesceReads_hotKey(t *testing.T) {
	t.Parallel()
	const goroutines, reads = 64, 50
	e, h := coalesced(t, true, Policy{TTL: time.Hour})
	ctx := context.Background()
	want := user{ID: "1", Name: "hot", Ver: 7}
	if err := e.Set(ctx, "1", want); err != nil {
		t.Fatal(err)
	}
	first := goGet(ctx, e, "1")
	<-h.reached
	queued := make([]chan getResult, goroutines-1)
	for i := range queued {
		queued[i] = goGet(ctx, e, "1")
	}
	waitQueued(t, e, "1", len(queued))
	close(h.gate)
	for _, ch := range append(queued, first) {
		if r := <-ch; r.err != nil || r.u != want {
			t.Fatalf("Get = %+v, %v; want %+v", r.u, r.err, want)
		}
	}
	if n := h.gets.Load(); n != 2 {
		t.Fatalf("%d GETs for %d overlapping reads, want 2", n, goroutines)
	}

	before := h.gets.Load() // (the hook holds only the first GET ever)
	var bad atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < reads; i++ {
				u, err := e.Get(ctx, "1", (&counter{}).load)
				if err != nil || u != want {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := bad.Load(); n != 0 {
		t.Fatalf("%d reads failed or were wrong", n)
	}
	total, gets := int64(goroutines*reads), h.gets.Load()-before
	t.Logf("%d GETs for %d reads (%.3f per read)", gets, total, float64(gets)/float64(total))
	if gets >= total {
		t.Fatalf("%d GETs for %d reads: not coalesced", gets, total)
	}
	if s := e.Stats(); s.Hits != uint64(total+goroutines) || s.Loads != 0 {
		t.Fatalf("stats = %+v", s)
	}
	// The last batch's runner retires the key after handing its result to
	// the callers, so the slot may outlive wg.Wait by a moment: wait for
	// it to go (a leaked slot never does).
	waitFor(t, 10*time.Second, func() bool {
		e.reads.mu.Lock()
		defer e.reads.mu.Unlock()
		return len(e.reads.slots) == 0
	})
}

// A Get that begins after a write completed sees the write, even while a
// GET sent before the write (holding the old value) is still in flight:
// the Get does not join that GET but waits for the next one. (With plain
// singleflight the Get would join it and return the old value.)
func TestCoalesceReads_noOlderThanCompletedWrite(t *testing.T) {
	t.Parallel()
	e, h := coalesced(t, true, Policy{TTL: time.Hour})
	ctx := context.Background()
	if err := e.Set(ctx, "1", user{ID: "1", Ver: 1}); err != nil {
		t.Fatal(err)
	}
	ra := goGet(ctx, e, "1")
	<-h.reached // a's GET has read version 1 and is in flight
	if err := e.Set(ctx, "1", user{ID: "1", Ver: 2}); err != nil {
		t.Fatal(err)
	}
	rb := goGet(ctx, e, "1") // begins after the write completed
	waitQueued(t, e, "1", 1)
	close(h.gate)
	if a := <-ra; a.err != nil || a.u.Ver != 1 {
		t.Fatalf("a = %+v, want version 1 (it began before the write)", a)
	}
	if b := <-rb; b.err != nil || b.u.Ver != 2 {
		t.Fatalf("b = %+v, want version 2: it began after the write completed", b)
	}
	if n := h.gets.Load(); n != 2 {
		t.Fatalf("GETs = %d, want 2", n)
	}
}

// A queued caller whose context ends leaves at once with ctx.Err(); the
// others queued with it get their value from the shared GET.
func TestCoalesceReads_queuedCallerCancelled(t *testing.T) {
	t.Parallel()
	e, h := coalesced(t, true, Policy{TTL: time.Hour})
	ctx := context.Background()
	want := user{ID: "1", Ver: 3}
	if err := e.Set(ctx, "1", want); err != nil {
		t.Fatal(err)
	}
	ra := goGet(ctx, e, "1")
	<-h.reached
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rb := goGet(bctx, e, "1")
	rc := goGet(ctx, e, "1")
	waitQueued(t, e, "1", 2)
	cancel()
	select {
	case b := <-rb: // while the first GET is still held
		if !errors.Is(b.err, context.Canceled) {
			t.Fatalf("b = %+v, want context.Canceled", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelled caller still waiting")
	}
	close(h.gate)
	for _, ch := range []chan getResult{ra, rc} {
		if res := <-ch; res.err != nil || res.u != want {
			t.Fatalf("Get = %+v, want %+v", res, want)
		}
	}
	if n := h.gets.Load(); n != 2 {
		t.Fatalf("GETs = %d, want 2", n)
	}
}

// When every caller queued for a GET has left, the GET is not sent.
func TestCoalesceReads_abandonedBatchNotSent(t *testing.T) {
	t.Parallel()
	e, h := coalesced(t, true, Policy{TTL: time.Hour})
	ctx := context.Background()
	if err := e.Set(ctx, "1", user{ID: "1"}); err != nil {
		t.Fatal(err)
	}
	ra := goGet(ctx, e, "1")
	<-h.reached
	bctx, cancel := context.WithCancel(ctx)
	rb := goGet(bctx, e, "1")
	waitQueued(t, e, "1", 1)
	cancel()
	if b := <-rb; !errors.Is(b.err, context.Canceled) {
		t.Fatalf("b = %+v, want context.Canceled", b)
	}
	close(h.gate)
	if a := <-ra; a.err != nil {
		t.Fatal(a.err)
	}
	if n := h.gets.Load(); n != 1 {
		t.Fatalf("GETs = %d, want 1: the abandoned batch was sent", n)
	}
	e.reads.mu.Lock()
	defer e.reads.mu.Unlock()
	if len(e.reads.slots) != 0 {
		t.Fatal("read slot left behind")
	}
}

// Only the read is shared: misses, "not found" answers and stale entries
// go through the strategy as before (here SingleFlight: one load).
func TestCoalesceReads_missesUseStrategy(t *testing.T) {
	t.Parallel()
	for _, absent := range []bool{false, true} {
		name := map[bool]string{false: "value", true: "notFound"}[absent]
		t.Run(name, func(t *testing.T) {
			e, _ := coalesced(t, false, Policy{TTL: time.Hour, NullTTL: time.Hour, Strategy: SingleFlight})
			l := &counter{absent: map[string]bool{"1": absent}}
			ctx := context.Background()
			var bad atomic.Int64
			var wg sync.WaitGroup
			for g := 0; g < 32; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 5; i++ {
						u, err := e.Get(ctx, "1", l.load)
						switch {
						case absent && !errors.Is(err, ErrNotFound):
							bad.Add(1)
						case !absent && (err != nil || u.Name != "n-1"):
							bad.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if bad.Load() != 0 || l.calls.Load() != 1 {
				t.Fatalf("%d bad reads, %d loads (want 0, 1)", bad.Load(), l.calls.Load())
			}
		})
	}
}

// Reads are shared adaptively, with no option: a lone reader
// sends its GET at once (one GET per Get), and readers that find a GET of
// their key in flight queue and share the next one.
func TestReads_sharedByDefault(t *testing.T) {
	t.Parallel()
	const reads, queued = 10, 8
	e, h := coalesced(t, true, Policy{TTL: time.Hour})
	ctx := context.Background()
	if err := e.Set(ctx, "1", user{ID: "1", Ver: 1}); err != nil {
		t.Fatal(err)
	}
	first := goGet(ctx, e, "1") // its GET is held after Redis answered
	<-h.reached
	var rest []chan getResult
	for i := 0; i < queued; i++ {
		rest = append(rest, goGet(ctx, e, "1"))
	}
	waitQueued(t, e, "1", queued)
	close(h.gate)
	for _, ch := range append(rest, first) {
		if r := <-ch; r.err != nil || r.u.Ver != 1 {
			t.Fatalf("Get = %+v, %v", r.u, r.err)
		}
	}
	if n := h.gets.Load(); n != 2 {
		t.Fatalf("GETs = %d, want 2 (the held one, then one for the %d queued)", n, queued)
	}
	for i := 0; i < reads; i++ {
		if _, err := e.Get(ctx, "1", (&counter{}).load); err != nil {
			t.Fatal(err)
		}
	}
	if n := h.gets.Load() - 2; n != reads {
		t.Fatalf("lone reader: GETs = %d, want %d", n, reads)
	}
}
