package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/testcontainers"
)

var _ metrics.BloomStatser = (*bloom.Filter)(nil)

// gauge returns the value of the one gauge series name with labels.
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
			if hasLabels(got, labels) {
				return m.GetGauge().GetValue()
			}
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
	st, err := f.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"asidekit_bloom_bits":                float64(st.Bits),
		"asidekit_bloom_bits_set":            float64(st.BitsSet),
		"asidekit_bloom_fill_ratio":          float64(st.BitsSet) / float64(st.Bits),
		"asidekit_bloom_estimated_count":     st.EstimatedCount,
		"asidekit_bloom_false_positive_rate": st.FalsePositiveRate,
		"asidekit_bloom_generation":          float64(st.Generation),
		"asidekit_bloom_rebuilding":          0,
	} {
		if got := gauge(t, reg, name, "filter", "slugs"); got != want {
			t.Errorf("%s = %v, Stats says %v", name, got, want)
		}
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

type failingFilter struct{}

func (failingFilter) Stats(context.Context) (bloom.Stats, error) {
	return bloom.Stats{}, errors.New("redis down")
}

func TestBloomCollector_reportsErrors(t *testing.T) {
	reg := registry(t, metrics.NewBloomCollector("broken", failingFilter{}))
	if _, err := reg.Gather(); err == nil || !strings.Contains(err.Error(), "redis down") {
		t.Fatalf("Gather with a failing filter: %v, want its error", err)
	}
}
