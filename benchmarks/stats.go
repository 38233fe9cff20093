package benchmarks

import (
	"slices"
	"time"
)

// quantiles are the percentiles kept for charts.
var quantiles = []float64{0.5, 0.9, 0.99, 0.999, 1}

// latencies collects the durations of every request of a run, one slice
// per worker so that recording takes no lock.
type latencies struct {
	perWorker [][]time.Duration
}

func newLatencies(workers int) *latencies {
	return &latencies{perWorker: make([][]time.Duration, workers)}
}

// worker returns worker w's recorder. Only that worker may call it.
func (l *latencies) add(w int, d time.Duration) {
	l.perWorker[w] = append(l.perWorker[w], d)
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

// bursts counts the groups of overlapping spans: a span that starts after
// every earlier-starting span has ended begins a new group. Concurrent
// loads of one key are one stampede; sequential refreshes are one each.
func bursts(spans []span) int {
	sorted := slices.Clone(spans)
	slices.SortFunc(sorted, func(a, b span) int { return a.start.Compare(b.start) })
	n := 0
	var end time.Time
	for i, s := range sorted {
		if i == 0 || s.start.After(end) {
			n++
			end = s.end
		} else if s.end.After(end) {
			end = s.end
		}
	}
	return n
}

func maxOf(xs []int64) int64 {
	var m int64
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
