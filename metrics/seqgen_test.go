package metrics_test

import (
	"context"
	"testing"

	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

var _ metrics.SeqgenStatser = (*seqgen.Generator)(nil)

func TestSeqgenCollector_matchesStats(t *testing.T) {
	rn := testcontainers.Redis(t)
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	g, err := seqgen.New(rn.Client, pg.DB, &seqgen.Options{Namespace: rn.Namespace, Segment: 10})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, metrics.NewSeqgenCollector("orders", g))
	ctx := context.Background()
	for range 3 {
		if _, err := g.NextN(ctx, "ORD", 10); err != nil { // each takes a whole segment
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := g.Next(ctx, "ORD"); err != nil { // a batch each
			t.Fatal(err)
		}
	}
	_ = g.Close()
	s := g.Stats()
	if s.Batches < 2 {
		t.Fatalf("2 Next calls: %+v, want 2 batches", s)
	}
	// The first batch reserves its segment itself; the others find it used
	// up and the next one reserved (or being reserved) in the background.
	if s.Reserved < 3 || s.SyncRefills < 1 || s.BackgroundRefills < 2 {
		t.Fatalf("3 batches of a whole segment: %+v, want 3 reserved, 1 by the caller, 2 in the background", s)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   uint64
	}{
		{"asidekit_seqgen_segments_reserved_total", nil, s.Reserved},
		{"asidekit_seqgen_segments_dropped_total", nil, s.Dropped},
		{"asidekit_seqgen_refills_total", []string{"mode", "sync"}, s.SyncRefills},
		{"asidekit_seqgen_refills_total", []string{"mode", "background"}, s.BackgroundRefills},
		{"asidekit_seqgen_waits_total", nil, s.Waits},
		{"asidekit_seqgen_fallbacks_total", nil, s.Fallbacks},
		{"asidekit_seqgen_redis_errors_total", nil, s.RedisErrors},
		{"asidekit_seqgen_batches_total", nil, s.Batches},
		{"asidekit_seqgen_abandoned_total", nil, s.Abandoned},
	} {
		labels := append([]string{"generator", "orders"}, c.labels...)
		if got := gather(t, reg, c.name, labels...).value; got != float64(c.want) {
			t.Errorf("%s%v = %v, Stats says %d", c.name, labels, got, c.want)
		}
	}
}
