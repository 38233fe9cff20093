package metrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// allEvents are the events cacheaside names, found the way the package
// finds them: Event.String prints "Event(n)" for the others.
func allEvents() []cacheaside.Event {
	var evs []cacheaside.Event
	for ev := cacheaside.Event(0); !strings.HasPrefix(ev.String(), "Event("); ev++ {
		evs = append(evs, ev)
	}
	return evs
}

// sample is one gathered series.
type sample struct {
	value   float64   // a counter's or gauge's value
	count   uint64    // a histogram's sample count
	sum     float64   // a histogram's sample sum
	buckets []float64 // a histogram's upper bounds
}

// gather returns the one series of metric name, among what g gathers,
// whose labels include labels (name, value pairs); it fails the test
// unless there is exactly one.
func gather(t testing.TB, g prometheus.Gatherer, name string, labels ...string) sample {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var s sample
	found := 0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if !hasLabels(got, labels) {
				continue
			}
			found++
			h := m.GetHistogram()
			s = sample{value: m.GetCounter().GetValue() + m.GetGauge().GetValue(), count: h.GetSampleCount(), sum: h.GetSampleSum()}
			for _, b := range h.GetBucket() {
				s.buckets = append(s.buckets, b.GetUpperBound())
			}
		}
	}
	if found != 1 {
		t.Fatalf("%d series %s%v, want 1", found, name, labels)
	}
	return s
}

// hasLabels reports whether got includes want (name, value pairs).
func hasLabels(got map[string]string, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		if v, ok := got[want[i]]; !ok || v != want[i+1] {
			return false
		}
	}
	return true
}

// registry returns a new registry with cs registered.
func registry(t testing.TB, cs ...prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	return reg
}
