package metrics_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/testcontainers"
)

// statsByEvent maps each event to the Stats field that counts it.
func statsByEvent(s cacheaside.Stats) map[cacheaside.Event]uint64 {
	return map[cacheaside.Event]uint64{
		cacheaside.EventHit:                  s.Hits,
		cacheaside.EventMiss:                 s.Misses,
		cacheaside.EventNullHit:              s.NullHits,
		cacheaside.EventFiltered:             s.Filtered,
		cacheaside.EventLoad:                 s.Loads,
		cacheaside.EventLoadError:            s.LoadErrors,
		cacheaside.EventStaleServed:          s.StaleServed,
		cacheaside.EventRefresh:              s.Refreshes,
		cacheaside.EventLockWait:             s.LockWaits,
		cacheaside.EventLockTimeout:          s.LockTimeouts,
		cacheaside.EventRejectedSet:          s.RejectedSets,
		cacheaside.EventDecodeError:          s.DecodeErrors,
		cacheaside.EventCacheError:           s.CacheErrors,
		cacheaside.EventOverloaded:           s.Overloaded,
		cacheaside.EventBypass:               s.Bypassed,
		cacheaside.EventInvalidationDeferred: s.InvalidationsDeferred,
		cacheaside.EventInvalidationRetry:    s.InvalidationRetries,
		cacheaside.EventLocalHit:             s.LocalHits,
		cacheaside.EventLocalMiss:            s.LocalMisses,
		cacheaside.EventLocalEviction:        s.LocalEvictions,
		cacheaside.EventLocalInvalidation:    s.LocalInvalidations,
		cacheaside.EventLocalFlush:           s.LocalFlushes,
		cacheaside.EventLeaseLost:            s.LeasesLost,
		cacheaside.EventHotPromotion:         s.HotPromotions,
		cacheaside.EventHotDemotion:          s.HotDemotions,
	}
}

type item struct {
	ID string `json:"id"`
}

var errDB = errors.New("db down")

// load returns item{id}, ErrNotFound for "absent" and errDB for "broken".
func load(ctx context.Context, id string) (item, error) {
	switch id {
	case "absent":
		return item{}, cacheaside.ErrNotFound
	case "broken":
		return item{}, errDB
	}
	return item{ID: id}, nil
}

func TestCacheObserver_matchesEntityStats(t *testing.T) {
	rn := testcontainers.Redis(t)
	obs := newObserver(t, nil)
	reg := registry(t, obs)
	c, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	policy := cacheaside.Policy{TTL: time.Minute, NullTTL: time.Minute, Strategy: cacheaside.SingleFlight}
	users, err := cacheaside.NewEntity[item](c, "user", policy)
	if err != nil {
		t.Fatal(err)
	}
	orders, err := cacheaside.NewEntity[item](c, "order", policy)
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	get := func(e *cacheaside.Entity[item], id string, want error) {
		t.Helper()
		if _, err := e.Get(ctx, id, load); !errors.Is(err, want) {
			t.Fatalf("Get(%q) = %v, want %v", id, err, want)
		}
	}
	get(users, "1", nil)                         // miss + load
	get(users, "1", nil)                         // hit
	get(users, "absent", cacheaside.ErrNotFound) // miss + load (not found)
	get(users, "absent", cacheaside.ErrNotFound) // null hit
	get(users, "broken", errDB)                  // miss + load error
	get(orders, "7", nil)                        // another entity: miss + load
	get(orders, "7", nil)                        // hit
	get(orders, "7", nil)                        // hit

	for _, e := range []struct {
		name  string
		stats cacheaside.Stats
	}{{"user", users.Stats()}, {"order", orders.Stats()}} {
		byEvent := statsByEvent(e.stats)
		for _, ev := range allEvents() {
			want, ok := byEvent[ev]
			if !ok {
				t.Fatalf("event %s has no Stats field in statsByEvent: update the test", ev)
			}
			got := gather(t, reg, "asidekit_cache_events_total", "entity", e.name, "event", ev.String()).value
			if got != float64(want) {
				t.Errorf("%s %s = %v, Stats says %d", e.name, ev, got, want)
			}
		}
		ok := gather(t, reg, "asidekit_cache_load_seconds", "entity", e.name, "outcome", "ok")
		bad := gather(t, reg, "asidekit_cache_load_seconds", "entity", e.name, "outcome", "error")
		if ok.count != e.stats.Loads || bad.count != e.stats.LoadErrors {
			t.Errorf("%s load histogram counts ok=%d error=%d, Stats says Loads=%d LoadErrors=%d",
				e.name, ok.count, bad.count, e.stats.Loads, e.stats.LoadErrors)
		}
		if sum, want := ok.sum+bad.sum, e.stats.LoadTime.Seconds(); math.Abs(sum-want) > 1e-6 {
			t.Errorf("%s load histogram sum = %vs, Stats.LoadTime = %vs", e.name, sum, want)
		}
	}

	// The run above must have exercised what it claims to.
	s := users.Stats()
	if s.Hits != 1 || s.Misses != 3 || s.NullHits != 1 || s.Loads != 2 || s.LoadErrors != 1 {
		t.Fatalf("user stats %+v: the scenario did not run as intended", s)
	}
}

func TestCacheObserver_allSeriesAtFirstEvent(t *testing.T) {
	obs := newObserver(t, nil)
	if n := testutil.CollectAndCount(obs); n != 0 {
		t.Fatalf("%d series before any event, want 0", n)
	}
	obs.OnEvent("user", cacheaside.EventHit, 0)
	if n, want := testutil.CollectAndCount(obs, "asidekit_cache_events_total"), len(allEvents()); n != want {
		t.Errorf("%d event series after the first event, want %d (one per event)", n, want)
	}
	if n := testutil.CollectAndCount(obs, "asidekit_cache_load_seconds"); n != 2 {
		t.Errorf("%d load series, want 2 (ok and error)", n)
	}
	reg := registry(t, obs)
	if v := gather(t, reg, "asidekit_cache_events_total", "entity", "user", "event", "hit").value; v != 1 {
		t.Errorf("hits = %v, want 1", v)
	}
	if v := gather(t, reg, "asidekit_cache_events_total", "entity", "user", "event", "miss").value; v != 0 {
		t.Errorf("misses = %v, want 0", v)
	}
}

func TestCacheObserver_loadHistogram(t *testing.T) {
	obs := newObserver(t, nil)
	reg := registry(t, obs)
	obs.OnEvent("user", cacheaside.EventLoad, 3*time.Millisecond)
	obs.OnEvent("user", cacheaside.EventLoad, 2*time.Second)
	obs.OnEvent("user", cacheaside.EventLoadError, 40*time.Millisecond)
	ok := gather(t, reg, "asidekit_cache_load_seconds", "entity", "user", "outcome", "ok")
	if ok.count != 2 || math.Abs(ok.sum-2.003) > 1e-9 {
		t.Errorf("ok: count %d sum %v, want 2 and 2.003", ok.count, ok.sum)
	}
	if !slices.Equal(ok.buckets, metrics.DefaultLoadBuckets) {
		t.Errorf("buckets %v, want DefaultLoadBuckets %v", ok.buckets, metrics.DefaultLoadBuckets)
	}
	bad := gather(t, reg, "asidekit_cache_load_seconds", "entity", "user", "outcome", "error")
	if bad.count != 1 || math.Abs(bad.sum-0.04) > 1e-9 {
		t.Errorf("error: count %d sum %v, want 1 and 0.04", bad.count, bad.sum)
	}
}

func TestCacheObserver_options(t *testing.T) {
	buckets := []float64{0.01, 0.1, 1}
	obs := newObserver(t, &metrics.CacheObserverOptions{Namespace: "shop", Buckets: buckets})
	buckets[0] = 99 // the observer keeps its own copy
	reg := registry(t, obs)
	obs.OnEvent("user", cacheaside.EventLoad, time.Millisecond)
	if v := gather(t, reg, "shop_cache_events_total", "entity", "user", "event", "load").value; v != 1 {
		t.Errorf("shop_cache_events_total{load} = %v, want 1", v)
	}
	s := gather(t, reg, "shop_cache_load_seconds", "entity", "user", "outcome", "ok")
	if want := []float64{0.01, 0.1, 1}; !slices.Equal(s.buckets, want) {
		t.Errorf("buckets %v, want %v", s.buckets, want)
	}
}

func TestCacheObserver_unknownEvent(t *testing.T) {
	obs := newObserver(t, nil)
	reg := registry(t, obs)
	ev := cacheaside.Event(1000) // an event from a newer cacheaside
	obs.OnEvent("user", ev, 0)
	obs.OnEvent("user", ev, 0)
	if v := gather(t, reg, "asidekit_cache_events_total", "entity", "user", "event", ev.String()).value; v != 2 {
		t.Errorf("%s = %v, want 2", ev, v)
	}
}

func TestCacheObserver_concurrent(t *testing.T) {
	obs := newObserver(t, nil)
	reg := registry(t, obs)
	entities := []string{"a", "b", "c", "d"}
	const goroutines, perGoroutine = 8, 500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perGoroutine {
				obs.OnEvent(entities[(g+i)%len(entities)], cacheaside.EventMiss, 0)
				obs.OnEvent(entities[i%len(entities)], cacheaside.EventLoad, time.Millisecond)
			}
		}()
	}
	wg.Wait()
	var misses float64
	var loads uint64
	for _, e := range entities {
		misses += gather(t, reg, "asidekit_cache_events_total", "entity", e, "event", "miss").value
		loads += gather(t, reg, "asidekit_cache_load_seconds", "entity", e, "outcome", "ok").count
	}
	if want := goroutines * perGoroutine; misses != float64(want) || loads != uint64(want) {
		t.Errorf("misses %v, loads %d, want %d each", misses, loads, want)
	}
}

func TestCacheObserver_register(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := newObserver(t, nil)
	if err := reg.Register(first); err != nil {
		t.Fatalf("first Register: %v", err)
	}
	err := reg.Register(newObserver(t, &metrics.CacheObserverOptions{Namespace: metrics.DefaultNamespace}))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second observer in the same namespace: err = %v, want AlreadyRegisteredError", err)
	}
	if are.ExistingCollector != first {
		t.Errorf("ExistingCollector is not the first observer")
	}

	other := newObserver(t, &metrics.CacheObserverOptions{Namespace: "other"})
	if err := reg.Register(other); err != nil {
		t.Fatalf("observer in another namespace: %v", err)
	}
	first.OnEvent("user", cacheaside.EventHit, 0)
	other.OnEvent("user", cacheaside.EventHit, 0)
	other.OnEvent("user", cacheaside.EventHit, 0)
	if v := gather(t, reg, "asidekit_cache_events_total", "entity", "user", "event", "hit").value; v != 1 {
		t.Errorf("asidekit hits = %v, want 1", v)
	}
	if v := gather(t, reg, "other_cache_events_total", "entity", "user", "event", "hit").value; v != 2 {
		t.Errorf("other hits = %v, want 2", v)
	}
}

func TestCacheObserver_invalidUTF8Entity(t *testing.T) {
	obs := newObserver(t, nil)
	reg := registry(t, obs)
	obs.OnEvent("bad\xffname", cacheaside.EventHit, 0)
	obs.OnEvent("bad\xffname", cacheaside.Event(1000), 0)
	if v := gather(t, reg, "asidekit_cache_events_total", "entity", "bad\uFFFDname", "event", "hit").value; v != 1 {
		t.Errorf("hits = %v, want 1", v)
	}
}

// newObserver returns a CacheObserver with opts, failing t on an error.
func newObserver(t testing.TB, opts *metrics.CacheObserverOptions) *metrics.CacheObserver {
	t.Helper()
	obs, err := metrics.NewCacheObserver(opts)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func TestNewCacheObserver_invalidBuckets(t *testing.T) {
	for _, b := range [][]float64{{1, 0.5}, {0.1, 0.1}, {math.NaN()}, {0.1, math.NaN(), 1}} {
		obs, err := metrics.NewCacheObserver(&metrics.CacheObserverOptions{Buckets: b})
		if obs != nil || !errors.Is(err, metrics.ErrInvalid) {
			t.Errorf("Buckets %v: NewCacheObserver = %v, %v; want nil, ErrInvalid", b, obs, err)
		}
	}
	opts := &metrics.CacheObserverOptions{Buckets: []float64{0.5, 1, math.Inf(1)}}
	if _, err := metrics.NewCacheObserver(opts); err != nil {
		t.Errorf("Buckets %v: %v", opts.Buckets, err)
	}
	if opts.Namespace != "" {
		t.Errorf("NewCacheObserver set the caller's Namespace to %q", opts.Namespace)
	}
}
