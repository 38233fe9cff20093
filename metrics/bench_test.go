package metrics_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/metrics"
)

// vecObserver is the obvious Observer, the baseline: a label lookup (hash
// of the label values, map lookup under a read lock) per event.
type vecObserver struct {
	events *prometheus.CounterVec
	loads  *prometheus.HistogramVec
}

func newVecObserver() *vecObserver {
	return &vecObserver{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "events_total", Help: "h"}, []string{"entity", "event"}),
		loads:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "load_seconds", Help: "h", Buckets: metrics.DefaultLoadBuckets}, []string{"entity", "outcome"}),
	}
}

func (o *vecObserver) OnEvent(entity string, ev cacheaside.Event, d time.Duration) {
	o.events.WithLabelValues(entity, ev.String()).Inc()
	switch ev {
	case cacheaside.EventLoad:
		o.loads.WithLabelValues(entity, "ok").Observe(d.Seconds())
	case cacheaside.EventLoadError:
		o.loads.WithLabelValues(entity, "error").Observe(d.Seconds())
	}
}

// BenchmarkOnEvent compares CacheObserver with the baseline, on a hit (a
// counter) and a load (a counter and a histogram), from one goroutine and
// from all.
func BenchmarkOnEvent(b *testing.B) {
	observers := []struct {
		name string
		new  func() cacheaside.Observer
	}{
		{"observer", func() cacheaside.Observer { return newObserver(b, nil) }},
		{"vec-baseline", func() cacheaside.Observer { return newVecObserver() }},
	}
	for _, ev := range []cacheaside.Event{cacheaside.EventHit, cacheaside.EventLoad} {
		for _, o := range observers {
			b.Run(ev.String()+"/"+o.name, func(b *testing.B) {
				obs := o.new()
				obs.OnEvent("user", ev, 0)
				for b.Loop() {
					obs.OnEvent("user", ev, 3*time.Millisecond)
				}
			})
			b.Run(ev.String()+"/"+o.name+"/parallel", func(b *testing.B) {
				obs := o.new()
				obs.OnEvent("user", ev, 0)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						obs.OnEvent("user", ev, 3*time.Millisecond)
					}
				})
			})
		}
	}
}
