package metrics

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/cacheaside"
)

// CacheObserverOptions configure a CacheObserver. The zero value means all
// defaults.
type CacheObserverOptions struct {
	// Namespace is the first part of every metric name. Default
	// "asidekit".
	Namespace string

	// Buckets are the upper bounds, in seconds, of the load latency
	// histogram. Default DefaultLoadBuckets: 1ms to 10s.
	Buckets []float64
}

// ErrInvalid is returned (wrapped, with the reason) by NewCacheObserver
// for options it cannot use.
var ErrInvalid = errors.New("metrics: invalid argument")

// Defaults of CacheObserverOptions fields.
const DefaultNamespace = "asidekit"

// DefaultLoadBuckets are the load histogram's default bucket bounds, in
// seconds: 1ms to 10s in 1-2.5-5 steps, from a primary-key lookup to a
// query that should have been a timeout.
var DefaultLoadBuckets = []float64{
	.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10,
}

// CacheObserver counts cacheaside events and load latencies. It is a
// cacheaside.Observer and a prometheus.Collector: pass it as
// cacheaside.Options.Observer and register it on a registry. Create it
// with NewCacheObserver; it is safe for concurrent use.
type CacheObserver struct {
	events *prometheus.CounterVec
	loads  *prometheus.HistogramVec

	// entities maps an entity name to its metrics. It is copied on write
	// (entity names are few and fixed), so that OnEvent reads it with one
	// atomic load and no lock.
	entities atomic.Pointer[map[string]*entityMetrics]
	mu       sync.Mutex // serializes writers of entities
}

// entityMetrics are one entity's series, resolved once so that an event
// costs no label hashing.
type entityMetrics struct {
	events  []prometheus.Counter // indexed by cacheaside.Event
	loadOK  prometheus.Observer
	loadErr prometheus.Observer
}

var (
	_ cacheaside.Observer  = (*CacheObserver)(nil)
	_ prometheus.Collector = (*CacheObserver)(nil)
)

// knownEvents is the number of events cacheaside names: Event.String
// prints "Event(n)" for the others. Events past it (added to cacheaside
// after this package was built against it) still count, on a slower path.
var knownEvents = func() int {
	n := 0
	for n < 1024 && !strings.HasPrefix(cacheaside.Event(n).String(), "Event(") {
		n++
	}
	return n
}()

// NewCacheObserver returns a CacheObserver. A nil opts means the defaults
// (see CacheObserverOptions); opts is copied. Buckets that are not
// strictly increasing (Prometheus would panic on the first load observed)
// are an error that matches ErrInvalid.
func NewCacheObserver(opts *CacheObserverOptions) (*CacheObserver, error) {
	var c CacheObserverOptions
	if opts != nil {
		c = *opts
	}
	if c.Namespace == "" {
		c.Namespace = DefaultNamespace
	}
	if c.Buckets == nil {
		c.Buckets = DefaultLoadBuckets
	}
	for i, b := range c.Buckets {
		if math.IsNaN(b) || i > 0 && !(c.Buckets[i-1] < b) {
			return nil, fmt.Errorf("%w: Buckets %v are not strictly increasing", ErrInvalid, c.Buckets)
		}
	}
	o := &CacheObserver{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: c.Namespace,
			Subsystem: "cache",
			Name:      "events_total",
			Help:      "Events of asidekit cache entities (hits, misses, loads, ...), by entity and event.",
		}, []string{"entity", "event"}),
		loads: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: c.Namespace,
			Subsystem: "cache",
			Name:      "load_seconds",
			Help:      "Latency of asidekit cache loader calls, by entity and outcome (ok, including not found; error).",
			Buckets:   append([]float64(nil), c.Buckets...),
		}, []string{"entity", "outcome"}),
	}
	o.entities.Store(&map[string]*entityMetrics{})
	return o, nil
}

// OnEvent counts ev for entity, and for EventLoad and EventLoadError
// observes d in the load histogram. It takes no lock once the entity has
// been seen, and never blocks.
func (o *CacheObserver) OnEvent(entity string, ev cacheaside.Event, d time.Duration) {
	m := (*o.entities.Load())[entity]
	if m == nil {
		m = o.add(entity)
	}
	if ev >= 0 && int(ev) < len(m.events) {
		m.events[ev].Inc()
	} else {
		o.events.WithLabelValues(labelValue(entity), ev.String()).Inc()
	}
	switch ev {
	case cacheaside.EventLoad:
		m.loadOK.Observe(d.Seconds())
	case cacheaside.EventLoadError:
		m.loadErr.Observe(d.Seconds())
	}
}

// add creates entity's series, at zero, and publishes them.
func (o *CacheObserver) add(entity string) *entityMetrics {
	o.mu.Lock()
	defer o.mu.Unlock()
	old := *o.entities.Load()
	if m := old[entity]; m != nil {
		return m
	}
	label := labelValue(entity)
	m := &entityMetrics{
		events:  make([]prometheus.Counter, knownEvents),
		loadOK:  o.loads.WithLabelValues(label, "ok"),
		loadErr: o.loads.WithLabelValues(label, "error"),
	}
	for ev := range m.events {
		m.events[ev] = o.events.WithLabelValues(label, cacheaside.Event(ev).String())
	}
	next := maps.Clone(old)
	next[entity] = m
	o.entities.Store(&next)
	return m
}

// Describe implements prometheus.Collector.
func (o *CacheObserver) Describe(ch chan<- *prometheus.Desc) {
	o.events.Describe(ch)
	o.loads.Describe(ch)
}

// Collect implements prometheus.Collector.
func (o *CacheObserver) Collect(ch chan<- prometheus.Metric) {
	o.events.Collect(ch)
	o.loads.Collect(ch)
}

// labelValue makes an entity name a valid label value: WithLabelValues
// panics on invalid UTF-8, which cacheaside allows in names (it escapes
// them in keys), and an Observer must never panic its caller's Get.
func labelValue(entity string) string {
	return strings.ToValidUTF8(entity, "\uFFFD")
}
