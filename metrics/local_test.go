package metrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/testcontainers"
)

var _ metrics.LocalStatser = (*cacheaside.Entity[string])(nil)

func TestLocalCollector_matchesStats(t *testing.T) {
	rn := testcontainers.Redis(t)
	c, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := cacheaside.NewEntity[string](c, "user", cacheaside.Policy{Local: &cacheaside.LocalPolicy{}})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, metrics.NewLocalCollector("user", e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitLocal(ctx); err != nil {
		t.Fatal(err)
	}
	load := func(context.Context, string) (string, error) { return "v", nil }
	for i := 0; i < 4; i++ { // miss+load, Redis hit (fills), then local hits
		if _, err := e.Get(ctx, "1", load); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Invalidate(ctx, "1"); err != nil {
		t.Fatal(err)
	}
	s := e.Stats()
	if s.LocalHits == 0 || s.LocalMisses == 0 {
		t.Fatalf("stats: %+v", s)
	}
	for _, m := range []struct {
		name string
		want uint64
	}{
		{"asidekit_local_hits_total", s.LocalHits},
		{"asidekit_local_misses_total", s.LocalMisses},
		{"asidekit_local_evictions_total", s.LocalEvictions},
		{"asidekit_local_flushes_total", s.LocalFlushes},
		{"asidekit_local_promotions_total", s.HotPromotions},
		{"asidekit_local_demotions_total", s.HotDemotions},
		{"asidekit_local_bytes", s.LocalBytes},
	} {
		if got := gather(t, reg, m.name, "entity", "user").value; got != float64(m.want) {
			t.Errorf("%s = %v, Stats says %d", m.name, got, m.want)
		}
	}
}

// The automatic near cache of hot keys: promotions, demotions and its
// bytes, as Stats has them.
func TestLocalCollector_hotKeys(t *testing.T) {
	rn := testcontainers.Redis(t)
	c, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace,
		HotKeys: &cacheaside.HotKeyPolicy{MinReads: 1, Sample: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, err := cacheaside.NewEntity[string](c, "user", cacheaside.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, metrics.NewLocalCollector("user", e))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitLocal(ctx); err != nil {
		t.Fatal(err)
	}
	load := func(context.Context, string) (string, error) { return "v", nil }
	// A miss, a load and its fill, whose SET Redis reports back as a
	// change of the key this connection read: wait for that message first,
	// or it could demote the copy the reads below promote.
	if _, err := e.Get(ctx, "1", load); err != nil {
		t.Fatal(err)
	}
	for e.Stats().LocalInvalidations == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the fill's invalidation never came: %+v", e.Stats())
		case <-time.After(time.Millisecond):
		}
	}
	// Redis hits (the second promotes), then a local hit.
	for i := 0; e.Stats().LocalHits == 0 || e.Stats().LocalBytes == 0; i++ {
		if i > 100 {
			t.Fatalf("never promoted and held: %+v", e.Stats())
		}
		if _, err := e.Get(ctx, "1", load); err != nil {
			t.Fatal(err)
		}
	}
	// Each series lies between Stats read just before and just after it.
	for _, m := range []struct {
		name string
		of   func(cacheaside.Stats) uint64
	}{
		{"asidekit_local_promotions_total", func(s cacheaside.Stats) uint64 { return s.HotPromotions }},
		{"asidekit_local_demotions_total", func(s cacheaside.Stats) uint64 { return s.HotDemotions }},
		{"asidekit_local_bytes", func(s cacheaside.Stats) uint64 { return s.LocalBytes }},
	} {
		before := m.of(e.Stats())
		got := gather(t, reg, m.name, "entity", "user").value
		after := m.of(e.Stats())
		if lo, hi := float64(min(before, after)), float64(max(before, after)); got < lo || got > hi || hi == 0 && m.name != "asidekit_local_demotions_total" {
			t.Errorf("%s = %v, Stats says %d before and %d after", m.name, got, before, after)
		}
	}
}
