package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/repo"
)

// outageClock is a run's timeline: the workload's start, and the moments
// the fault began and the link was restored (UnixNano, 0 until then).
type outageClock struct {
	t0             time.Time
	fault, restore atomic.Int64
}

// phase of a request that begins at t: 0 before the fault, 1 during it,
// 2 after the restore.
func (c *outageClock) phase(t time.Time) int {
	switch n := t.UnixNano(); {
	case c.restore.Load() != 0 && n >= c.restore.Load():
		return 2
	case c.fault.Load() != 0 && n >= c.fault.Load():
		return 1
	}
	return 0
}

// outageTally is one goroutine's counts; merged at the end.
type outageTally struct {
	done           []int64 // requests completed per 100 ms from t0
	errsDuring     int64
	readsDuring    int64
	failOpen       int64
	afterCommit    int64
	staleBefore    int64 // before the restore (before and during the fault)
	staleAfter     int64
	staleAfterOOB  int64         // of staleAfter, those older only than a plain-SQL write
	lastStaleAfter time.Duration // restore → the end of the last stale read after it
	falseNotFound  int64
	latBefore      []time.Duration
	latDuring      []time.Duration
	// latSteady holds the latencies of the requests that began at least
	// outageSettle after the fault began; stepDuring those of each step
	// of the requests that began during the fault, and slowBy counts the
	// requests during the fault slower than outageSlow by their slowest
	// step.
	latSteady  []time.Duration
	stepDuring [numOutageSteps][]time.Duration
	slowBy     [numOutageSteps]int64
	serials    []string
	firstErr   error // the first error of a request that began during the fault
}

func (t *outageTally) add(o *outageTally) {
	for i, n := range o.done {
		t.done[i] += n
	}
	t.errsDuring += o.errsDuring
	t.readsDuring += o.readsDuring
	t.failOpen += o.failOpen
	t.afterCommit += o.afterCommit
	t.staleBefore += o.staleBefore
	t.staleAfter += o.staleAfter
	t.staleAfterOOB += o.staleAfterOOB
	t.lastStaleAfter = max(t.lastStaleAfter, o.lastStaleAfter)
	t.falseNotFound += o.falseNotFound
	t.latBefore = append(t.latBefore, o.latBefore...)
	t.latDuring = append(t.latDuring, o.latDuring...)
	t.latSteady = append(t.latSteady, o.latSteady...)
	for i := range o.stepDuring {
		t.stepDuring[i] = append(t.stepDuring[i], o.stepDuring[i]...)
		t.slowBy[i] += o.slowBy[i]
	}
	t.serials = append(t.serials, o.serials...)
	if t.firstErr == nil {
		t.firstErr = o.firstErr
	}
}

// outageWorkload is what every request goroutine shares.
type outageWorkload struct {
	p     OutageParams
	truth *outageTruth
	clock *outageClock
	reads atomic.Int64 // reads completed, for the hit ratio
	local bool         // the processes have a near cache
}

// pickRow returns a row that exists: hot half the time.
func (w *outageWorkload) pickRow(rng *rand.Rand) int64 {
	if rng.IntN(2) == 0 {
		return 1 + rng.Int64N(int64(w.p.Hot))
	}
	return 1 + rng.Int64N(int64(w.p.Rows))
}

// request is one request of the service: the limiter, then a read (85%),
// a write through the repository (10%) or a serial number (5%). It
// records how long the limiter and the operation took in st.
func (w *outageWorkload) request(ctx context.Context, pr *outageProc, rng *rand.Rand, phase int, t *outageTally, st *outageSteps) error {
	start := time.Now()
	res, err := pr.limiter.Allow(ctx, fmt.Sprintf("client-%d", rng.IntN(64)))
	st.limiter = time.Since(start)
	opStart := time.Now()
	defer func() { st.op = time.Since(opStart) }()
	switch {
	case errors.Is(err, limit.ErrFailedOpen):
		t.failOpen++
	case err != nil:
		return err
	case !res.Allowed:
		return errors.New("limited") // the limit is far above the load
	}
	switch x := rng.IntN(100); {
	case x < 10:
		st.kind = stepWrite
		ac, err := w.truth.repoWrite(ctx, pr, w.pickRow(rng))
		if ac {
			t.afterCommit++
		}
		return err
	case x < 15:
		st.kind = stepSerial
		s, err := pr.gen.Next(ctx, outageBiz)
		if err == nil {
			t.serials = append(t.serials, s)
		}
		return err
	}
	// A read: hot rows 70%, any row 25%, absent ids 5%.
	st.kind = stepRead
	var id int64
	switch x := rng.IntN(100); {
	case x < 70:
		id = 1 + rng.Int64N(int64(w.p.Hot))
	case x < 95:
		id = 1 + rng.Int64N(int64(w.p.Rows))
	default:
		id = int64(w.p.Rows) + 1 + rng.Int64N(int64(w.p.Rows))
	}
	exists := id <= int64(w.p.Rows)
	var acked, oob int64
	var after bool
	begin, gateBegin := time.Now().UnixNano(), pr.kit.Cache().Recovering()
	if exists {
		acked, oob, after = w.truth.want(id)
	}
	it, err := pr.items.Get(ctx, id)
	end, gateEnd := time.Now().UnixNano(), pr.kit.Cache().Recovering()
	w.reads.Add(1)
	if phase == 1 {
		t.readsDuring++
	}
	switch {
	case errors.Is(err, repo.ErrNotFound):
		if exists {
			t.falseNotFound++
		}
		return nil
	case err != nil:
		return err
	case !exists:
		return fmt.Errorf("absent id %d read as %+v", id, it)
	case it.Version < acked || after && it.Version < oob:
		s := outageStale{id: id, got: it.Version, acked: acked, oob: oob, proc: pr.idx,
			begin: begin, end: end, after: after, gateBegin: gateBegin, gateEnd: gateEnd}
		// Older only than other processes' writes that returned nil:
		// maybe the near cache's propagation delay, judged at the end
		// against the run's window (outageLog.settle).
		if (!after || it.Version >= oob) && w.local {
			if s.local, s.age = w.truth.log.propagation(id, pr.idx, begin, it.Version); s.local {
				w.truth.log.staleRead(s)
				return nil
			}
		}
		w.truth.log.staleRead(s)
	}
	switch {
	case after && it.Version < max(acked, oob):
		t.staleAfter++
		if it.Version >= acked {
			t.staleAfterOOB++
		}
		if at := time.Since(time.Unix(0, w.clock.restore.Load())); at > t.lastStaleAfter && w.clock.restore.Load() != 0 {
			t.lastStaleAfter = at
		}
	case it.Version < acked:
		t.staleBefore++
	}
	return nil
}

// outageSample is the reads completed and the DB loads of every process
// at one moment.
type outageSample struct {
	at           time.Time
	reads, loads int64
}

// runOutageFault runs the workload on processes whose Redis link goes
// through a proxy, faults the proxy after p.Before for p.Fault, and
// returns the row of variant v and fault f.
func runOutageFault(ctx context.Context, env *Env, p OutageParams, v outageVariant, f outageFault, gate bool) (Row, error) {
	var row Row
	if err := seedOutageRows(ctx, env, p.Rows); err != nil {
		return row, err
	}
	px, err := faultproxy.New(env.RedisAddrs[0])
	if err != nil {
		return row, err
	}
	defer px.Close()
	ns := env.Sub("outage-" + v.name + "-" + string(f))
	procs := make([]*outageProc, p.Instances)
	defer func() {
		for _, pr := range procs {
			if pr != nil {
				pr.close()
			}
		}
	}()
	for i := range procs {
		if procs[i], err = openOutageProc(ctx, env, px.Addr(), ns, v.kit, p.Rows); err != nil {
			return row, err
		}
		procs[i].idx = i
	}
	if err := procs[0].items.WarmFilter(ctx); err != nil {
		return row, err
	}
	cdcs, err := startOutageCDCs(ctx, env, procs, px.Addr(), ns, "asidebench_"+randomHex(6), p.Rows, true, gate)
	if err != nil {
		return row, err
	}
	defer cdcs.drop(ctx)
	if _, err := waitServing(ctx, procs); err != nil {
		return row, err
	}
	if err := warmOutage(ctx, procs, p.Rows); err != nil {
		return row, err
	}

	w := &outageWorkload{p: p, truth: newOutageTruth(p.Rows), clock: &outageClock{t0: time.Now()}, local: outageLocal() != nil}
	c := w.clock
	end := c.t0.Add(p.Before + p.Fault + p.After)
	buckets := int((p.Before+p.Fault+p.After)/(100*time.Millisecond)) + 2
	var wg sync.WaitGroup
	// The fault.
	var opensBefore uint64 // the node guards' breaker openings before it
	wg.Go(func() {
		_ = backoff.Sleep(ctx, time.Until(c.t0.Add(p.Before)))
		opensBefore = guardOpens(procs)
		if f == faultCut {
			px.Cut()
		} else {
			px.Stall()
		}
		c.fault.Store(time.Now().UnixNano())
		_ = backoff.Sleep(ctx, p.Fault)
		w.truth.markRestore(px.Heal)
		c.restore.Store(w.truth.restoreAt.Load())
	})
	// The plain-SQL writer.
	var oobErr atomic.Pointer[error]
	wg.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		interval := time.Second / time.Duration(p.OutOfBandRate)
		for next := time.Now(); time.Now().Before(end) && ctx.Err() == nil; next = next.Add(interval) {
			_ = backoff.Sleep(ctx, time.Until(next))
			if err := w.truth.oobWrite(ctx, env.DB, w.pickRow(rng)); err != nil && ctx.Err() == nil {
				oobErr.CompareAndSwap(nil, &err)
				return
			}
		}
	})
	// The hit ratio's samples.
	var samples []outageSample
	wg.Go(func() {
		for t := time.Now(); ; t = time.Now() {
			var loads uint64
			for _, pr := range procs {
				loads += pr.items.Stats().Loads
			}
			samples = append(samples, outageSample{at: t, reads: w.reads.Load(), loads: int64(loads)})
			if !t.Before(end) || backoff.Sleep(ctx, 100*time.Millisecond) != nil {
				return
			}
		}
	})
	// The requests.
	tallies := make([]*outageTally, p.Instances*p.Goroutines)
	for i := range tallies {
		t := &outageTally{done: make([]int64, buckets)}
		tallies[i] = t
		pr := procs[i%p.Instances]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 11))
			for start := time.Now(); start.Before(end) && ctx.Err() == nil; start = time.Now() {
				phase := c.phase(start)
				var st outageSteps
				err := w.request(ctx, pr, rng, phase, t, &st)
				done := time.Now()
				t.done[min(int(done.Sub(c.t0)/(100*time.Millisecond)), buckets-1)]++
				switch phase {
				case 0:
					t.latBefore = append(t.latBefore, done.Sub(start))
				case 1:
					t.recordDuring(start, done, c, &st)
				}
				if phase == 1 {
					if err != nil {
						t.errsDuring++
						if t.firstErr == nil {
							t.firstErr = err
						}
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return row, err
	}
	if e := oobErr.Load(); e != nil {
		return row, fmt.Errorf("plain-SQL writer: %w", *e)
	}
	all := &outageTally{done: make([]int64, buckets)}
	for _, t := range tallies {
		all.add(t)
	}
	faultAt, restoreAt := time.Unix(0, c.fault.Load()), time.Unix(0, c.restore.Load())
	row.Set(MetricThroughputBefore, rate(all.done, c.t0, c.t0, faultAt))
	row.Set(MetricThroughputDuring, rate(all.done, c.t0, faultAt, restoreAt))
	slices.Sort(all.latBefore)
	row.Set(MetricP99Before, quantileMs(all.latBefore, 0.99))
	slices.Sort(all.latDuring)
	row.Set(MetricP99During, quantileMs(all.latDuring, 0.99))
	slices.Sort(all.latSteady)
	row.Set(MetricP99DuringSteady, quantileMs(all.latSteady, 0.99))
	all.setSteps(&row)
	row.Set(MetricGuardOpensBefore, float64(opensBefore))
	row.Set(MetricErrorsDuring, float64(all.errsDuring))
	row.Set(MetricReadsDuring, float64(all.readsDuring))
	row.Set(MetricLimiterFailOpen, float64(all.failOpen))
	row.Set(MetricSerials, float64(len(all.serials)))
	row.Set(MetricDuplicateSerials, float64(duplicates(all.serials)))
	row.Set(MetricAfterCommitErrors, float64(all.afterCommit))
	before, _ := hitRatio(samples, c.t0, faultAt)
	endRatio, _ := hitRatio(samples, end.Add(-time.Second), end)
	row.Set(MetricHitRatioBefore, before)
	row.Set(MetricHitRatioEnd, endRatio)
	row.Set(MetricRecovery, recoveryMs(samples, before, restoreAt))
	window := outageLocalWindow(quantile(all.latBefore, 0.99))
	local := w.truth.log.settle(window, c.restore.Load())
	all.staleBefore += local.before
	all.staleAfter += local.after
	all.lastStaleAfter = max(all.lastStaleAfter, local.lastAfter)
	row.Set(MetricStaleDuring, float64(all.staleBefore))
	row.Set(MetricStaleAfterRestore, float64(all.staleAfter))
	row.Set(MetricStaleAfterRestoreOOB, float64(all.staleAfterOOB))
	row.Set(MetricLastStaleAfterRestore, float64(all.lastStaleAfter.Milliseconds()))
	row.Set(MetricFalseNotFound, float64(all.falseNotFound))
	row.Set(MetricStaleLocal, float64(local.local))
	row.Set(MetricStaleLocalMax, ms(local.localMax))
	row.Set(MetricStaleLocalWindow, ms(window))
	var notes []string
	if all.firstErr != nil {
		notes = append(notes, "first error during the fault: "+all.firstErr.Error())
	}
	notes = append(notes, w.truth.log.describe(c.fault.Load(), c.restore.Load())...)
	row.Notes = strings.Join(notes, "; ")
	return row, nil
}

// warmOutage has every process read every row once: each row cached in
// Redis and in the near caches.
func warmOutage(ctx context.Context, procs []*outageProc, rows int) error {
	for _, pr := range procs {
		for lo := 1; lo <= rows; lo += 500 {
			ids := make([]int64, 0, 500)
			for id := lo; id < lo+500 && id <= rows; id++ {
				ids = append(ids, int64(id))
			}
			if _, err := pr.items.GetMany(ctx, ids); err != nil {
				return err
			}
		}
	}
	return nil
}

// rate is the number of completions per second in [from, to), from
// counts per 100 ms since t0.
func rate(done []int64, t0, from, to time.Time) float64 {
	const w = 100 * time.Millisecond
	lo, hi := int(from.Sub(t0)/w), int(to.Sub(t0)/w)
	if hi <= lo || lo < 0 || hi > len(done) {
		return 0
	}
	var n int64
	for _, d := range done[lo:hi] {
		n += d
	}
	return float64(n) / (time.Duration(hi-lo) * w).Seconds()
}

// quantileMs is the q-quantile of sorted latencies, in milliseconds.
func quantileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))].Microseconds()) / 1000
}

// duplicates counts the serials issued more than once (each extra issue).
func duplicates(serials []string) int {
	seen := make(map[string]bool, len(serials))
	n := 0
	for _, s := range serials {
		if seen[s] {
			n++
		}
		seen[s] = true
	}
	return n
}

// hitRatio is the share of the reads completed between the first sample
// at or after from and the last at or before to that caused no DB load.
func hitRatio(samples []outageSample, from, to time.Time) (float64, bool) {
	var a, b *outageSample
	for i := range samples {
		s := &samples[i]
		if a == nil && !s.at.Before(from) {
			a = s
		}
		if !s.at.After(to) {
			b = s
		}
	}
	if a == nil || b == nil || b.reads <= a.reads {
		return 0, false
	}
	return 1 - float64(b.loads-a.loads)/float64(b.reads-a.reads), true
}

// recoveryMs is how long after restore the hit ratio over 200 ms was back
// to 90% of before: the end of the first such window, minus restore. -1
// when it never was.
func recoveryMs(samples []outageSample, before float64, restore time.Time) float64 {
	for i, s := range samples {
		if s.at.Before(restore) {
			continue
		}
		for _, e := range samples[i+1:] {
			if e.at.Sub(s.at) < 200*time.Millisecond {
				continue
			}
			if r, ok := hitRatio(samples, s.at, e.at); ok && r >= 0.9*before {
				return float64(e.at.Sub(restore).Milliseconds())
			}
			break
		}
	}
	return -1
}
