package benchmarks

import (
	"context"
	"slices"
	"sort"
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
	// MetricWritesUnread counts, over a skewed keyspace, the writes some
	// reader process never read again before the run ended: neither
	// served nor stale there (their delay covers the processes that did).
	MetricWritesUnread = "writes_unread"
	// MetricStaleAgeMax is the oldest stale read's age: from the return of
	// the first write it missed to its beginning, in milliseconds.
	MetricStaleAgeMax = "stale_age_max_ms"
)

// staleDrive runs readers over hot keys while one writer changes them, and
// measures online, per write, when each reader process first served it:
// the common part of local_invalidation and outside_write. It keeps
// O(writes × processes) records plus the stale reads, never every read (a
// default local_invalidation run made tens of millions of reads, and
// keeping them all cost gigabytes of heap and the GC work that came with
// it, inside the very latencies being measured); the stale reads are
// counted per reader goroutine (see staleAges).
type staleDrive struct {
	procs, goroutines, keys, writes int
	writeEvery                      time.Duration
	// keySpace, when positive, makes keys the reads of a sweep, each of a
	// key drawn from Zipf(zipf) over keySpace keys; the writes' keys are
	// drawn from the same distribution (see LocalInvalidationParams).
	keySpace int
	zipf     float64
	// window, when positive, is the stale reads' window (see
	// LocalInvalidationParams.Window); 0: max(delays) + 10ms.
	window time.Duration
	// readEvery is each reader goroutine's pause after a sweep of the
	// keys (DefaultReadEvery if not positive).
	readEvery time.Duration
	// tail is the longest wait after the last write for every process to
	// serve the last version of every key; the run ends as soon as they
	// all have.
	tail time.Duration
	// read reads key k in process proc and returns the version it got.
	read func(ctx context.Context, proc, k int) (int64, error)
	// write makes write w, of key k, and returns the version it made.
	write func(ctx context.Context, w, k int) (int64, error)
}

// DefaultReadEvery is LocalInvalidationParams.ReadEvery's default.
const DefaultReadEvery = time.Millisecond

// readSpan is when a read began and ended, in ns since the run's start; end
// 0 is no read.
type readSpan struct{ begin, end int64 }

// writeRec is one write: the version it made, when it returned, and per
// process the read that served it first (see keyLog.read).
type writeRec struct {
	ver   int64
	done  int64
	first []readSpan
}

// keyLog is what a staleDrive knows of one key: its writes in the order
// they returned (so in order of version too), and who served them.
type keyLog struct {
	mu     sync.Mutex
	writes []writeRec
	// last is, per process, when its latest read of the key began (nil
	// until the key is read): over a skewed keyspace, whether a process
	// read a write's key at all after the write returned.
	last []int64
}

// wrote records a write of version ver that just returned, to be served
// by procs processes. Its time is taken under the lock, so that a read
// begun later finds the write once it ends (see read).
func (l *keyLog) wrote(ver int64, procs int, since func() int64, pending *atomic.Int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes = append(l.writes, writeRec{ver: ver, done: since(), first: make([]readSpan, procs)})
	pending.Add(int64(procs))
}

// read records a read of process proc, begun at r.begin and ended at
// r.end, that returned version ver. Every write it serves (returned before
// the read began, of a version ver or older) gets it as its first read in
// proc unless a read begun earlier served it already; pending counts down
// the (write, process) pairs served for the first time. It returns the
// read's age if the read was stale (a write of a newer version had
// returned before it began): from the return of the first such write to
// the read's beginning; -1 otherwise.
//
// The writes a read serves are a prefix of l.writes, and a write's first
// reads began no earlier than those of the writes before it (whatever
// serves a write serves every earlier one), so the walk back from the
// newest served write stops at the first write served no later than
// r.begin: usually after one step.
//
// It also reports whether a stale read is a regression: proc had already
// served the write it missed, in a read begun before this one.
// Only a regression can be older than the window max(delays) + 10ms: a
// process that had not served the write yet serves it later (its delay is
// longer than the read's age) or never (its delay runs to the run's end).
func (l *keyLog) read(proc int, r readSpan, ver int64, pending *atomic.Int64) (age int64, regression bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if proc >= len(l.last) {
		l.last = append(l.last, make([]int64, proc+1-len(l.last))...)
	}
	l.last[proc] = max(l.last[proc], r.begin)
	ws := l.writes
	n := len(ws) // writes returned before the read began: ws[:n]
	for n > 0 && ws[n-1].done >= r.begin {
		n--
	}
	// ws[:m] are also of version ver or older.
	m := sort.Search(n, func(i int) bool { return ws[i].ver > ver })
	age = -1
	if m < n {
		age = r.begin - ws[m].done
		f := ws[m].first[proc]
		regression = f.end != 0 && f.begin < r.begin
	}
	for i := m - 1; i >= 0; i-- {
		f := &ws[i].first[proc]
		if f.end != 0 && f.begin <= r.begin {
			break
		}
		if f.end == 0 {
			pending.Add(-1)
		}
		*f = r
	}
	return age, regression
}

// staleStats is what a staleDrive measured.
type staleStats struct {
	// delays are the writes' propagation delays, sorted: from the write's
	// return until every process served the new version (until the run's
	// end for a write some process never served).
	delays   []time.Duration
	unseen   int           // writes some process read again but never served
	unread   int           // writes some process never read again (keySpace only)
	stale    int           // reads begun after a newer write returned
	after    int           // of those, begun more than the window after it
	maxAge   time.Duration // the oldest stale read's age
	requests int           // reads
	writes   int           // writes made without an error
	errors   int64         // failed reads and writes
}

// drive returns the staleDrive of p: read returns a value whose Name is
// its version; the tail is p.Tail, or def when that is zero.
func (p LocalInvalidationParams) drive(def time.Duration, read func(ctx context.Context, proc, k int) (Value, error),
	write func(ctx context.Context, w, k int) (int64, error)) staleDrive {
	return staleDrive{
		procs: p.Instances, goroutines: p.Goroutines, keys: p.Keys,
		writes: p.Writes, writeEvery: p.WriteEvery, readEvery: p.readEvery(),
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

// readEvery is p.ReadEvery, or DefaultReadEvery when it is not positive.
func (p LocalInvalidationParams) readEvery() time.Duration {
	if p.ReadEvery > 0 {
		return p.ReadEvery
	}
	return DefaultReadEvery
}

func (d staleDrive) run(ctx context.Context) staleStats {
	d.procs, d.goroutines, d.keys = max(d.procs, 1), max(d.goroutines, 1), max(d.keys, 1)
	if d.readEvery <= 0 {
		d.readEvery = DefaultReadEvery
	}
	nkeys, zipf := d.keys, 0.0
	if d.keySpace > 0 {
		nkeys, zipf = d.keySpace, d.zipf
	}
	start := time.Now()
	since := func() int64 { return int64(time.Since(start)) }
	logs := make([]keyLog, nkeys)
	var pending atomic.Int64 // (write, process) pairs not yet served
	stop := make(chan struct{})
	var errs atomic.Int64
	// Each reader goroutine's count of reads, and the ages of its stale
	// reads (see keyLog.read).
	reads := make([]int, d.procs*d.goroutines)
	ages := make([]staleAges, d.procs*d.goroutines)
	var wg sync.WaitGroup
	for i := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc := i / d.goroutines
			// A sweep reads every key once, from key i on (the
			// goroutines of a process read different keys at a time),
			// then pauses: every key is read by every process at least
			// once per sweep and pause.
			// Over a skewed keyspace a sweep reads d.keys keys drawn
			// from its distribution instead.
			keys := newZipfKeys(nkeys, zipf, uint64(i))
			pause := time.NewTimer(0)
			defer pause.Stop()
			for {
				select {
				case <-stop:
					return
				case <-pause.C:
				}
				for range d.keys {
					k := keys.next()
					b := since()
					ver, err := d.read(ctx, proc, k)
					if err != nil {
						errs.Add(1)
						continue
					}
					reads[i]++
					if age, reg := logs[k].read(proc, readSpan{b, since()}, ver, &pending); age >= 0 {
						ages[i].add(time.Duration(age), d.window, reg)
					}
				}
				pause.Reset(d.readEvery)
			}
		}()
	}

	// The writer's keys: in turn from key 0, or drawn with a seed no
	// reader has.
	wseed := uint64(0)
	if zipf > 0 {
		wseed = uint64(len(reads)) + 1<<32
	}
	wkeys := newZipfKeys(nkeys, zipf, wseed)
	wrote := 0
	tick := time.NewTicker(d.writeEvery)
	for w := 0; w < d.writes && ctx.Err() == nil; w++ {
		<-tick.C
		k := wkeys.next()
		ver, err := d.write(ctx, w, k)
		if err != nil {
			errs.Add(1)
		} else {
			wrote++
		}
		logs[k].wrote(ver, d.procs, since, &pending)
	}
	tick.Stop()
	// The run ends when every process served every write (a read of the
	// key begun after it returned the new version or a newer one), or
	// after the tail.
	deadline := time.Now().Add(d.tail)
	for time.Now().Before(deadline) && ctx.Err() == nil && pending.Load() > 0 {
		time.Sleep(2 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	st := analyseStaleAges(logs, ages, since(), d.keySpace > 0, d.window)
	for _, n := range reads {
		st.requests += n
	}
	st.errors = errs.Load()
	st.writes = wrote
	return st
}

// analyseStaleAges computes the delays and stale counts from the key logs
// and the stale reads' ages; end is the run's end. With skewed, a process that
// never read a write's key after the write returned is left out of its
// delay (the write counts in unread); a write no process read again has no
// delay. window is the stale reads' window, or 0 for max(delays) + 10ms.
func analyseStaleAges(logs []keyLog, ages []staleAges, end int64, skewed bool, window time.Duration) staleStats {
	var st staleStats
	for i := range logs {
		l := &logs[i]
		for _, w := range l.writes {
			last, unseen, unread := int64(-1), false, false
			for proc, f := range w.first {
				switch {
				case f.end != 0:
					last = max(last, f.end)
				case skewed && (proc >= len(l.last) || l.last[proc] <= w.done):
					unread = true
				default:
					unseen = true
				}
			}
			if unread {
				st.unread++
			}
			if unseen {
				st.unseen++
				last = end
			}
			if last >= 0 {
				st.delays = append(st.delays, time.Duration(last-w.done))
			}
		}
	}
	slices.Sort(st.delays)
	fixed := window > 0
	if !fixed {
		window = quantile(st.delays, 1) + 10*time.Millisecond
	}
	for i := range ages {
		a := &ages[i]
		st.stale += int(a.n)
		st.maxAge = max(st.maxAge, a.max)
		if fixed {
			st.after += int(a.after)
			continue
		}
		st.after += int(a.lost)
		for _, r := range a.regressions {
			if r > window {
				st.after++
			}
		}
	}
	return st
}

// staleAges are one reader goroutine's stale reads: their count, the
// oldest, and what decides which were past the window: with a window
// fixed in advance, an exact count of those past it; otherwise the ages of
// the regressions (see keyLog.read), the only ones that can be, up to
// maxRegressions of them, and a count of those beyond, counted past it.
// Memory is bounded however many stale reads a local tier that hears of
// nothing makes.
type staleAges struct {
	n           int64
	max         time.Duration
	after       int64
	regressions []time.Duration
	lost        int64
}

// maxRegressions bounds the regression ages one reader goroutine keeps.
const maxRegressions = 1 << 16

// add counts a stale read of age a; window is the fixed window, or 0;
// regression says whether its process had served the write before.
func (s *staleAges) add(a, window time.Duration, regression bool) {
	s.n++
	s.max = max(s.max, a)
	switch {
	case window > 0:
		if a > window {
			s.after++
		}
	case !regression:
	case len(s.regressions) < maxRegressions:
		s.regressions = append(s.regressions, a)
	default:
		s.lost++
	}
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

// setStale sets outside_write's staleness metrics on row: writes made,
// stale reads, the oldest one's age, writes unseen and, over a skewed
// keyspace, unread.
func (st staleStats) setStale(row *Row, skewed bool) {
	row.Set(MetricWrites, float64(st.writes))
	row.Set(MetricStaleReads, float64(st.stale))
	row.Set(MetricStaleAgeMax, ms(st.maxAge))
	row.Set(MetricWritesUnseen, float64(st.unseen))
	if skewed {
		row.Set(MetricWritesUnread, float64(st.unread))
	}
}
