package seqgen_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// envTrustAsked, set, runs TestGenerator_Next_batchTakesWhatIsLeft with
// batches handing out the numbers they asked for rather than those the
// script issued, to show that the test fails without the rule.
const envTrustAsked = "SEQGEN_TEST_TRUST_ASKED"

// The calls that queue while a script call is in flight go together in
// the next one, MaxBatch at a time, and get consecutive numbers.
func TestGenerator_Next_joinsWaitingCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newNextHook()
	g := e.hookedGen(t, h, func(o *seqgen.Options) { o.MaxBatch = 4 })
	ctx := context.Background()
	seen := newSerials()
	seen.add(mustNext(t, g, "ORD")) // the day's first segment
	calls, batches := h.calls.Load(), g.Stats().Batches

	h.hold.Store(true)
	results := []<-chan result{goNext(ctx, g, "ORD")}
	<-h.entered // a call of one is in flight
	for range 10 {
		results = append(results, goNext(ctx, g, "ORD"))
	}
	waitQueued(t, g, 10)
	h.hold.Store(false)
	h.release <- struct{}{}
	var got []int64
	for _, c := range results {
		r := <-c
		if r.err != nil {
			t.Fatal(r.err)
		}
		seen.add(r.s)
		got = append(got, counterOf(t, r.s, "ORD20261129"))
	}
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i+2) {
			t.Fatalf("numbers %v, want 2..12", got)
		}
	}
	// 1 + 10 calls: one alone, then 4, 4 and 2.
	if n := h.calls.Load() - calls; n != 4 {
		t.Errorf("11 calls sent %d script calls, want 4 (1, then 10 in batches of at most 4)", n)
	}
	if n := g.Stats().Batches - batches; n != 4 {
		t.Errorf("Stats.Batches grew by %d, want 4", n)
	}
	if m := h.maxN.Load(); m != 4 {
		t.Errorf("largest batch asked for %d numbers, want MaxBatch 4", m)
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
}

// Three processes × 16 goroutines draw numbers through small segments
// (batches keep straddling a segment's end) while the keys are deleted
// halfway: no number twice, none above the DB mark, and far fewer script
// calls than Next calls.
func TestGenerator_Next_joinedAcrossProcesses(t *testing.T) {
	t.Parallel()
	const procs, workers, total = 3, 16, 12_000
	e := newEnv(t)
	var (
		gens  []*seqgen.Generator
		hooks []*nextHook
		nexts [procs]atomic.Int64
	)
	for range procs {
		h := newNextHook()
		g := newHookedGenDB(t, e, h, func(o *seqgen.Options) { o.Segment, o.MaxBatch = 50, 8 })
		gens, hooks = append(gens, g), append(hooks, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := newSerials()
	var drawn atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, procs*workers)
	for p, g := range gens {
		for range workers {
			wg.Go(func() {
				for drawn.Add(1) <= total {
					s, err := g.Next(ctx, "ORD")
					if err != nil {
						errs <- err
						cancel()
						return
					}
					nexts[p].Add(1)
					seen.add(s)
				}
			})
		}
	}
	for drawn.Load() < total/2 && ctx.Err() == nil {
		waitABit()
	}
	if err := testcontainers.DeleteNamespace(context.Background(), e.r.Client, e.r.Namespace); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Next: %v", err)
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
	if n := seen.len(); n != total {
		t.Fatalf("%d numbers, want %d", n, total)
	}
	for p, h := range hooks {
		if calls, n := h.calls.Load(), nexts[p].Load(); calls >= n {
			t.Errorf("process %d: %d script calls for %d Next calls: no call joined another", p, calls, n)
		} else {
			t.Logf("process %d: %d Next calls in %d script calls, stats %+v", p, n, calls, gens[p].Stats())
		}
	}
}

// newHookedGenDB is env.hookedGen with a DB pool of its own, as another
// process would have.
func newHookedGenDB(t *testing.T, e *env, h *nextHook, edit func(*seqgen.Options)) *seqgen.Generator {
	t.Helper()
	client := e.r.NewClient(t)
	client.AddHook(h)
	g := newGen(t, client, openDB(t, e.pg.DSN), e.opts(edit))
	mustNext(t, g, "WARM")
	h.calls.Store(0)
	return g
}

// A batch larger than what is left of the segment takes the rest of it,
// and its other calls go in the next call, after the refill: each number
// is one the script issued. Handing out the numbers asked for instead
// (SEQGEN_TEST_TRUST_ASKED) repeats numbers already issued.
func TestGenerator_Next_batchTakesWhatIsLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newNextHook()
	// RefillAt 1: the next segment is reserved only at the mark.
	g := e.hookedGen(t, h, func(o *seqgen.Options) { o.Segment, o.RefillAt = 10, 1 })
	if os.Getenv(envTrustAsked) != "" {
		seqgen.TrustAsked(g)
	}
	ctx := context.Background()
	seen := newSerials()
	for range 7 { // 1..7 of (0, 10]
		seen.add(mustNext(t, g, "ORD"))
	}
	h.hold.Store(true)
	results := []<-chan result{goNext(ctx, g, "ORD")} // 8
	<-h.entered
	for range 8 {
		results = append(results, goNext(ctx, g, "ORD"))
	}
	waitQueued(t, g, 8)
	h.hold.Store(false)
	h.release <- struct{}{}
	// The batch of 8 finds 9 and 10 left; its 6 other calls get 11..16.
	var got []int64
	for _, c := range results {
		r := <-c
		if r.err != nil {
			t.Fatal(r.err)
		}
		seen.add(r.s)
		got = append(got, counterOf(t, r.s, "ORD20261129"))
	}
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i+8) {
			t.Fatalf("numbers %v, want 8..16", got)
		}
	}
}

// go-redis sends a command again after some network errors, so a batch's
// script may run twice (the first reply lost): the numbers of the first
// run are skipped, none is handed out twice.
func TestGenerator_Next_replayedBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const procs, workers, each = 2, 8, 150
	seen := newSerials()
	var wg sync.WaitGroup
	for range procs {
		h := newNextHook()
		g := newHookedGenDB(t, e, h, func(o *seqgen.Options) { o.Segment = 50 })
		h.replay.Store(true)
		for range workers {
			wg.Go(func() {
				for range each {
					seen.add(mustNext(t, g, "ORD"))
				}
			})
		}
	}
	wg.Wait()
	if err := seen.check(dbMark(t, e.pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
	if n := seen.len(); n != procs*workers*each {
		t.Fatalf("%d numbers, want %d", n, procs*workers*each)
	}
}

// A caller that leaves (its context ends) while its batch is in flight
// gets its context's error at once; the others of the batch get their
// numbers, and the one taken for it is skipped. A caller that leaves while
// queued takes no number. When every caller of a call has left, the
// calls queued behind it go on without waiting for it.
func TestGenerator_Next_cancelledWaiter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newNextHook()
	g := e.hookedGen(t, h, nil)
	ctx := context.Background()
	num := func(r result) int64 {
		t.Helper()
		if r.err != nil {
			t.Fatal(r.err)
		}
		return counterOf(t, r.s, "ORD20261129")
	}
	mustNext(t, g, "ORD") // 1

	h.hold.Store(true)
	first := goNext(ctx, g, "ORD")
	<-h.entered // a call for 2 in flight
	ctxA, cancelA := context.WithCancel(ctx)
	defer cancelA()
	var waiting []<-chan result // a, b, c, queued in this order
	for i, c := range []context.Context{ctxA, ctx, ctx} {
		waiting = append(waiting, goNext(c, g, "ORD"))
		waitQueued(t, g, i+1)
	}
	h.release <- struct{}{}
	if v := num(<-first); v != 2 {
		t.Fatalf("first call = %d, want 2", v)
	}
	<-h.entered // the call for a, b and c (3..5) in flight
	ctxD, cancelD := context.WithCancel(ctx)
	d := goNext(ctxD, g, "ORD")
	waitQueued(t, g, 1)
	cancelD()
	if r := <-d; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("queued call, cancelled = %+v, want context.Canceled", r)
	}
	cancelA()
	if r := <-waiting[0]; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("call in flight, cancelled = %+v, want context.Canceled", r)
	}
	h.hold.Store(false)
	h.release <- struct{}{}
	if b, c := num(<-waiting[1]), num(<-waiting[2]); b != 4 || c != 5 {
		t.Fatalf("the others of the batch got %d and %d, want 4 and 5 (3 skipped)", b, c)
	}
	if st := g.Stats(); st.Abandoned != 1 {
		t.Fatalf("Stats.Abandoned = %d, want 1 (the number taken for a)", st.Abandoned)
	}
	if v := counterOf(t, mustNext(t, g, "ORD"), "ORD20261129"); v != 6 {
		t.Fatalf("next number = %d, want 6 (d took none)", v)
	}

	// The only caller of a call in flight leaves: the call queued behind
	// it goes at once, while the abandoned one is still held.
	h.hold.Store(true)
	ctxE, cancelE := context.WithCancel(ctx)
	defer cancelE()
	alone := goNext(ctxE, g, "ORD")
	<-h.entered
	h.hold.Store(false)
	behind := goNext(ctx, g, "ORD")
	waitQueued(t, g, 1)
	cancelE()
	if r := <-alone; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("call in flight, cancelled = %+v, want context.Canceled", r)
	}
	if v := num(<-behind); v != 7 {
		t.Fatalf("call behind the abandoned one = %d, want 7", v)
	}
	// The abandoned call may still run (and take 8, skipped) or not: go-redis
	// may refuse a command whose context has ended.
	h.release <- struct{}{}
	if v := counterOf(t, mustNext(t, g, "ORD"), "ORD20261129"); v <= 7 {
		t.Fatalf("next number = %d, want above 7", v)
	}
}

// A batch's error goes to every call in it: the day has 2 numbers left
// for a batch of 4; the first 2 get them, the others ErrExhausted.
func TestGenerator_Next_batchFansOutErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := newNextHook()
	g := e.hookedGen(t, h, func(o *seqgen.Options) { o.Width = 1 }) // 1..9
	ctx := context.Background()
	for range 6 {
		mustNext(t, g, "ORD")
	}
	h.hold.Store(true)
	results := []<-chan result{goNext(ctx, g, "ORD")} // 7
	<-h.entered
	for range 4 {
		results = append(results, goNext(ctx, g, "ORD"))
	}
	waitQueued(t, g, 4)
	h.hold.Store(false)
	h.release <- struct{}{}
	var got []string
	exhausted := 0
	for _, c := range results {
		r := <-c
		switch {
		case errors.Is(r.err, seqgen.ErrExhausted):
			exhausted++
		case r.err != nil:
			t.Fatal(r.err)
		default:
			got = append(got, r.s)
		}
	}
	slices.Sort(got)
	if exhausted != 2 || !slices.Equal(got, []string{"ORD202611297", "ORD202611298", "ORD202611299"}) {
		t.Fatalf("got %v and %d ErrExhausted, want 7, 8, 9 and 2", got, exhausted)
	}
}

// Joined calls from two processes on a Redis Cluster: the keys of a day
// share a hash tag, so every script call runs on one node.
func TestGenerator_Next_joinedOnCluster(t *testing.T) {
	t.Parallel()
	r := testcontainers.RedisCluster(t)
	pg := testcontainers.Postgres(t)
	if err := sample.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	o := &seqgen.Options{Namespace: r.Namespace, Location: shanghai, Clock: fixedClock(noon), Segment: 10}
	seen := newSerials()
	var wg sync.WaitGroup
	for range 2 {
		g := newGen(t, r.NewClient(t), pg.DB, o)
		for range 8 {
			wg.Go(func() {
				for range 25 {
					seen.add(mustNext(t, g, "ORD"))
				}
			})
		}
	}
	wg.Wait()
	if err := seen.check(dbMark(t, pg.DB, "ORD", "20261129")); err != nil {
		t.Fatal(err)
	}
	if n := seen.len(); n != 2*8*25 {
		t.Fatalf("%d numbers, want %d", n, 2*8*25)
	}
}
