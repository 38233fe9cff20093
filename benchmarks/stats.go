package benchmarks

import (
	"slices"
	"time"
)

// quantiles are the percentiles kept for charts.
var quantiles = []float64{0.5, 0.9, 0.99, 0.999, 1}

// latencies collects the durations of every request of a run, one slice
// per worker so that recording takes no lock, and the requests' start
// times when they are known.
type latencies struct {
	perWorker [][]time.Duration
	begins    [][]time.Time // by worker, parallel to perWorker when recorded with addAt
}

func newLatencies(workers int) *latencies {
	return &latencies{perWorker: make([][]time.Duration, workers), begins: make([][]time.Time, workers)}
}

// add records a request of worker w that took d. Only that worker may
// call it.
func (l *latencies) add(w int, d time.Duration) {
	l.perWorker[w] = append(l.perWorker[w], d)
}

// addAt records a request of worker w that began at start and took d.
// Only that worker may call it.
func (l *latencies) addAt(w int, start time.Time, d time.Duration) {
	l.perWorker[w] = append(l.perWorker[w], d)
	l.begins[w] = append(l.begins[w], start)
}

// during returns, sorted ascending, the durations of the requests
// recorded with addAt whose [start, end] overlaps one of windows.
func (l *latencies) during(windows []span) []time.Duration {
	var out []time.Duration
	for w, ds := range l.perWorker {
		for i, start := range l.begins[w] {
			end := start.Add(ds[i])
			for _, win := range windows {
				if !end.Before(win.start) && !start.After(win.end) {
					out = append(out, ds[i])
					break
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// sorted merges every worker's durations, sorted ascending.
func (l *latencies) sorted() []time.Duration {
	n := 0
	for _, s := range l.perWorker {
		n += len(s)
	}
	all := make([]time.Duration, 0, n)
	for _, s := range l.perWorker {
		all = append(all, s...)
	}
	slices.Sort(all)
	return all
}

// quantile returns the q-quantile (nearest rank) of sorted, 0 if empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	if q >= 1 {
		return sorted[len(sorted)-1]
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// setLatency adds p50_ms, p99_ms and max_ms to r and keeps the
// percentiles for charts.
func setLatency(r *Row, l *latencies) {
	s := l.sorted()
	r.Set(MetricP50, ms(quantile(s, 0.5)))
	r.Set(MetricP99, ms(quantile(s, 0.99)))
	r.Set(MetricMax, ms(quantile(s, 1)))
	r.Percentiles = r.Percentiles[:0]
	for _, q := range quantiles {
		r.Percentiles = append(r.Percentiles, Percentile{q, quantile(s, q)})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bucket counts times into buckets of width w from start; times before
// start are dropped. The result has at least n buckets.
func bucket(times []time.Time, start time.Time, w time.Duration, n int) []int64 {
	out := make([]int64, n)
	for _, t := range times {
		if t.Before(start) {
			continue
		}
		i := int(t.Sub(start) / w)
		for i >= len(out) {
			out = append(out, 0)
		}
		out[i]++
	}
	return out
}

// bursts returns the groups of overlapping spans, each as the span from
// its first start to its last end: a span that starts after every
// earlier-starting span has ended begins a new group. Concurrent loads of
// one key are one stampede; sequential refreshes are one each.
func bursts(spans []span) []span {
	sorted := slices.Clone(spans)
	slices.SortFunc(sorted, func(a, b span) int { return a.start.Compare(b.start) })
	var out []span
	for _, s := range sorted {
		switch n := len(out); {
		case n == 0 || s.start.After(out[n-1].end):
			out = append(out, span{start: s.start, end: s.end})
		case s.end.After(out[n-1].end):
			out[n-1].end = s.end
		}
	}
	return out
}

func maxOf(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
