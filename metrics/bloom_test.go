package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/testkit"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/testcontainers"
)

var _ metrics.BloomStatser = (*bloom.Filter)(nil)

// gauge returns the value of the one gauge or counter series name with
// labels.
func gauge(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
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
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no gauge %s%v", name, labels)
	return 0
}

func TestBloomCollector_matchesStats(t *testing.T) {
	rn := testcontainers.Redis(t)
	ctx := context.Background()
	f, err := bloom.New(rn.Client, "slugs", &bloom.Options{Namespace: rn.Namespace, Capacity: 1000, FalsePositiveRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, metrics.NewBloomCollector("slugs", f))
	if v := gauge(t, reg, "asidekit_bloom_fill_ratio", "filter", "slugs"); v != 0 {
		t.Fatalf("fill ratio of an empty filter = %v", v)
	}
	keys := make([]string, 800)
	for i := range keys {
		keys[i] = fmt.Sprint("slug-", i)
	}
	if err := f.AddMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	// Never rebuilt, the filter's shards are untrusted: checks count.
	if _, err := f.MightContainMany(ctx, []string{"slug-1", "other"}); err != nil {
		t.Fatal(err)
	}
	st, err := f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"asidekit_bloom_bits":                        float64(st.Bits),
		"asidekit_bloom_bits_set":                    float64(st.BitsSet),
		"asidekit_bloom_fill_ratio":                  float64(st.BitsSet) / float64(st.Bits),
		"asidekit_bloom_estimated_count":             st.EstimatedCount,
		"asidekit_bloom_false_positive_rate":         st.FalsePositiveRate,
		"asidekit_bloom_generation":                  float64(st.Generation),
		"asidekit_bloom_rebuilding":                  0,
		"asidekit_bloom_untrusted_shards":            float64(st.UntrustedShards),
		"asidekit_bloom_untrusted_checks_total":      float64(st.UntrustedChecks),
		"asidekit_bloom_auto_rebuilds_total":         float64(st.AutoRebuilds),
		"asidekit_bloom_auto_rebuild_failures_total": float64(st.AutoRebuildFailures),
		"asidekit_bloom_up":                          1,
		"asidekit_bloom_scrape_errors_total":         0,
	} {
		if got := gauge(t, reg, name, "filter", "slugs"); got != want {
			t.Errorf("%s = %v, Stats says %v", name, got, want)
		}
	}
	if st.UntrustedShards == 0 || st.UntrustedChecks == 0 {
		t.Errorf("a filter never rebuilt: %d untrusted shards, %d untrusted checks; the test exports zeros only",
			st.UntrustedShards, st.UntrustedChecks)
	}
	// 800 of 1000: about 800 counted, a fill ratio near 0.4 (half full at
	// capacity), a false-positive rate under the 1% target.
	if c := gauge(t, reg, "asidekit_bloom_estimated_count", "filter", "slugs"); math.Abs(c-800) > 40 {
		t.Errorf("estimated count %v after 800 adds", c)
	}
	if fp := gauge(t, reg, "asidekit_bloom_false_positive_rate", "filter", "slugs"); fp <= 0 || fp >= 0.01 {
		t.Errorf("false-positive rate %v at 80%% of capacity", fp)
	}
}

// flakyFilter returns stats, or err when err is set.
type flakyFilter struct {
	mu    sync.Mutex
	stats bloom.Stats
	err   error
}

func (f *flakyFilter) Stats(context.Context) (bloom.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats, f.err
}

func (f *flakyFilter) set(s bloom.Stats, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats, f.err = s, err
}

// series reports whether g gathers any series of metric name.
func series(t *testing.T, g prometheus.Gatherer, name string) bool {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return true
		}
	}
	return false
}

func TestBloomCollector_failedReadKeepsScrape(t *testing.T) {
	logs := testkit.CaptureLogs(t)
	f := &flakyFilter{err: errors.New("redis down")}
	reg := registry(t, metrics.NewBloomCollector("broken", f))
	for range 3 {
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("Gather with a failing filter: %v, want the other metrics served", err)
		}
	}
	if up := gauge(t, reg, "asidekit_bloom_up", "filter", "broken"); up != 0 {
		t.Errorf("up = %v while reads fail", up)
	}
	if n := gauge(t, reg, "asidekit_bloom_scrape_errors_total", "filter", "broken"); n != 5 {
		t.Errorf("scrape errors = %v after 5 failed scrapes (each Gather reads once)", n)
	}
	if series(t, reg, "asidekit_bloom_fill_ratio") {
		t.Error("a fill ratio exported before any read succeeded")
	}
	warns := logs.At(slog.LevelWarn, "")
	if len(warns) != 1 || !strings.Contains(warns[0], "redis down") || !strings.Contains(warns[0], "filter=broken") {
		t.Fatalf("warnings %q, want one naming the filter and the cause", warns)
	}

	f.set(bloom.Stats{Bits: 100, BitsSet: 10}, nil)
	if up := gauge(t, reg, "asidekit_bloom_up", "filter", "broken"); up != 1 {
		t.Errorf("up = %v once reads succeed", up)
	}
	if infos := logs.At(slog.LevelInfo, ""); len(infos) != 1 || !strings.Contains(infos[0], "failures=6") {
		t.Errorf("infos %q, want one recovery after the 6 failed Gathers", infos)
	}
}

func TestBloomCollector_failedReadRepeatsLastValues(t *testing.T) {
	testkit.CaptureLogs(t)
	f := &flakyFilter{stats: bloom.Stats{Bits: 1000, BitsSet: 600, Generation: 3, UntrustedChecks: 7}}
	reg := registry(t, metrics.NewBloomCollector("slugs", f))
	if v := gauge(t, reg, "asidekit_bloom_fill_ratio", "filter", "slugs"); v != 0.6 {
		t.Fatalf("fill ratio %v, want 0.6", v)
	}
	f.set(bloom.Stats{}, errors.New("redis down"))
	for name, want := range map[string]float64{
		"asidekit_bloom_fill_ratio":             0.6,
		"asidekit_bloom_generation":             3,
		"asidekit_bloom_untrusted_checks_total": 7,
		"asidekit_bloom_up":                     0,
	} {
		if got := gauge(t, reg, name, "filter", "slugs"); got != want {
			t.Errorf("%s = %v while Redis fails, want the last value read, %v", name, got, want)
		}
	}
}

// slowFilter answers when its context ends, as a Redis that hangs does.
type slowFilter struct{}

func (slowFilter) Stats(ctx context.Context) (bloom.Stats, error) {
	<-ctx.Done()
	return bloom.Stats{}, ctx.Err()
}

func TestBloomCollector_timeout(t *testing.T) {
	testkit.CaptureLogs(t)
	reg := registry(t, metrics.NewBloomCollectorWithOptions("slow", slowFilter{},
		&metrics.BloomOptions{Timeout: time.Millisecond}))
	if up := gauge(t, reg, "asidekit_bloom_up", "filter", "slow"); up != 0 {
		t.Errorf("up = %v after a read past the timeout", up)
	}
}

// TestBloomCollector_redisOutage is the issue: /metrics must answer while
// the filter's Redis is down.
func TestBloomCollector_redisOutage(t *testing.T) {
	logs := testkit.CaptureLogs(t)
	srv := testcontainers.NewRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	f, err := bloom.New(rdb, "slugs", &bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	// A scrape bound of a minute, not the default 200 ms: a starved
	// machine's first read must not count as the outage (a stopped server
	// refuses at once, so the bound does not lengthen the outage's reads).
	reg := registry(t, metrics.NewBloomCollectorWithOptions("slugs", f, &metrics.BloomOptions{Timeout: time.Minute}))
	set := gauge(t, reg, "asidekit_bloom_bits_set", "filter", "slugs")
	if set == 0 {
		t.Fatal("no bit set after an Add")
	}

	srv.Stop()
	if got := gauge(t, reg, "asidekit_bloom_bits_set", "filter", "slugs"); got != set {
		t.Errorf("bits set = %v during the outage, want the last value read, %v", got, set)
	}
	if up := gauge(t, reg, "asidekit_bloom_up", "filter", "slugs"); up != 0 {
		t.Errorf("up = %v during the outage", up)
	}
	if warns := logs.At(slog.LevelWarn, ""); len(warns) != 1 {
		t.Errorf("warnings %q, want one", warns)
	}

	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if up := gauge(t, reg, "asidekit_bloom_up", "filter", "slugs"); up != 1 {
		t.Errorf("up = %v once Redis is back", up)
	}
}
