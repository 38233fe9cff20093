package benchmarks

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Metrics of staleness under outside writes (outside_write), next to
// local_invalidation's invalidation_* and stale_reads_after_window.
const (
	// MetricStaleReads counts the reads that began after a write of their
	// key had returned and still answered an older version.
	MetricStaleReads = "stale_reads"
	// MetricWritesUnseen counts the writes some reader process had not yet
	// served when the run ended (their delay counts until then).
	MetricWritesUnseen = "writes_unseen"
)

// staleDrive runs readers over hot keys while one writer changes them, and
// records every read and write: the common part of local_invalidation and
// outside_write.
type staleDrive struct {
	procs, goroutines, keys, writes int
	writeEvery, readEvery           time.Duration
	// tail is the longest wait after the last write for every process to
	// serve the last version of every key; the run ends as soon as they
	// all have.
	tail time.Duration
	// read reads key k in process proc and returns the version it got.
	read func(ctx context.Context, proc, k int) (int64, error)
	// write makes write w, of key k, and returns the version it made.
	write func(ctx context.Context, w, k int) (int64, error)
}

// readRec is one read: its key, version and when it began and ended (ns
// since the run's start).
type readRec struct {
	key        int
	ver        int64
	begin, end int64
	proc       int
}

// writeRec is one write: the version it made and when it returned.
type writeRec struct {
	key  int
	ver  int64
	done int64
}

// staleStats is what a staleDrive measured.
type staleStats struct {
	// delays are the writes' propagation delays, sorted: from the write's
	// return until every process served the new version (until the run's
	// end for a write some process never served).
	delays   []time.Duration
	unseen   int   // writes some process never served
	stale    int   // reads begun after a newer write returned
	after    int   // of those, begun more than max(delays) + 10ms after it
	requests int   // reads
	errors   int64 // failed reads and writes
}

// drive returns the staleDrive of p: read returns a value whose Name is
// its version; the tail is p.Tail, or def when that is zero.
func (p LocalInvalidationParams) drive(def time.Duration, read func(ctx context.Context, proc, k int) (Value, error),
	write func(ctx context.Context, w, k int) (int64, error)) staleDrive {
	return staleDrive{
		procs: p.Instances, goroutines: p.Goroutines, keys: p.Keys,
		writes: p.Writes, writeEvery: p.WriteEvery, readEvery: p.ReadEvery,
		tail: p.tailOr(def),
		read: func(ctx context.Context, proc, k int) (int64, error) {
			got, err := read(ctx, proc, k)
			if err != nil {
				return 0, err
			}
			return strconv.ParseInt(got.Name, 10, 64)
		},
		write: write,
	}
}

func (d staleDrive) run(ctx context.Context) staleStats {
	d.procs, d.goroutines, d.keys = max(d.procs, 1), max(d.goroutines, 1), max(d.keys, 1)
	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }
	// seen[proc*keys+k] is the newest version of k that proc served in a
	// read begun after the last write returned (lastDone).
	seen := make([]atomic.Int64, d.procs*d.keys)
	var lastDone atomic.Int64
	lastDone.Store(1<<63 - 1)
	stop := make(chan struct{})
	var errs atomic.Int64
	recs := make([][]readRec, d.procs*d.goroutines)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc := i / d.goroutines
			for n := i; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := n % d.keys
				b := since()
				ver, err := d.read(ctx, proc, k)
				if err != nil {
					errs.Add(1)
					continue
				}
				recs[i] = append(recs[i], readRec{key: k, ver: ver, begin: b, end: since(), proc: proc})
				if b > lastDone.Load() {
					storeMax(&seen[proc*d.keys+k], ver)
				}
				if d.readEvery > 0 {
					time.Sleep(d.readEvery)
				} else {
					runtime.Gosched() // spinning readers must not starve the invalidation goroutines
				}
			}
		}()
	}

	writes := make([]writeRec, 0, d.writes)
	last := make([]int64, d.keys)
	tick := time.NewTicker(d.writeEvery)
	for w := 0; w < d.writes && ctx.Err() == nil; w++ {
		<-tick.C
		k := w % d.keys
		ver, err := d.write(ctx, w, k)
		if err != nil {
			errs.Add(1)
		}
		writes = append(writes, writeRec{key: k, ver: ver, done: since()})
		last[k] = max(last[k], ver)
	}
	tick.Stop()
	lastDone.Store(since())
	// The run ends when every process served every key's last version (a
	// read begun after the last write), or after the tail.
	deadline := time.Now().Add(d.tail)
	for time.Now().Before(deadline) && ctx.Err() == nil && !allSeen(seen, last, d.keys) {
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	st := analyseStale(recs, writes, d.procs, since())
	st.errors = errs.Load()
	return st
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

func allSeen(seen []atomic.Int64, last []int64, keys int) bool {
	for i := range seen {
		if seen[i].Load() < last[i%keys] {
			return false
		}
	}
	return true
}

// analyseStale computes staleStats from the records (all but errors).
func analyseStale(recs [][]readRec, writes []writeRec, procs int, end int64) staleStats {
	var st staleStats
	byKey := map[int][]readRec{}
	for _, rs := range recs {
		for _, r := range rs {
			byKey[r.key] = append(byKey[r.key], r)
		}
		st.requests += len(rs)
	}
	for _, rs := range byKey {
		slices.SortFunc(rs, func(a, b readRec) int { return cmp.Compare(a.begin, b.begin) })
	}
	for _, w := range writes {
		rs := byKey[w.key]
		i, _ := slices.BinarySearchFunc(rs, w.done, func(r readRec, t int64) int { return cmp.Compare(r.begin, t) })
		first := make([]int64, procs) // end of each process's first fresh read
		seen := 0
		for ; i < len(rs) && seen < procs; i++ {
			if r := rs[i]; r.ver >= w.ver && first[r.proc] == 0 {
				first[r.proc] = r.end
				seen++
			}
		}
		if seen < procs {
			st.unseen++
			st.delays = append(st.delays, time.Duration(end-w.done))
			continue
		}
		st.delays = append(st.delays, time.Duration(slices.Max(first)-w.done))
	}
	slices.Sort(st.delays)
	window := int64(quantile(st.delays, 1) + 10*time.Millisecond)
	wk := map[int][]writeRec{} // by key, in order of return
	for _, w := range writes {
		wk[w.key] = append(wk[w.key], w)
	}
	// newest is the version of the last write of ws that returned before t.
	newest := func(ws []writeRec, t int64) int64 {
		j, _ := slices.BinarySearchFunc(ws, t, func(w writeRec, t int64) int { return cmp.Compare(w.done, t) })
		if j == 0 {
			return 0
		}
		return ws[j-1].ver
	}
	for k, rs := range byKey {
		ws := wk[k]
		for _, r := range rs {
			if r.ver < newest(ws, r.begin) {
				st.stale++
				if r.ver < newest(ws, r.begin-window) {
					st.after++
				}
			}
		}
	}
	return st
}

// setInvalidation sets local_invalidation's metrics on row.
func (st staleStats) setInvalidation(row *Row) {
	row.Set(MetricRequests, float64(st.requests))
	row.Set(MetricErrors, float64(st.errors))
	row.Set(MetricInvalidationP50, ms(quantile(st.delays, 0.5)))
	row.Set(MetricInvalidationP99, ms(quantile(st.delays, 0.99)))
	row.Set(MetricInvalidationMax, ms(quantile(st.delays, 1)))
	row.Set(MetricStaleAfter, float64(st.after))
}
