package metrics_test

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/repo/configstore"
)

var _ metrics.ConfigStoreStatser = (*configstore.Store)(nil)

func TestConfigStoreCollector_fields(t *testing.T) {
	s := numbered[configstore.Stats](t)
	src := statsFunc[configstore.Stats](func() configstore.Stats { return s })
	checkEveryField[configstore.Stats](t, metrics.NewConfigStoreCollector("flags", src))

	reg := registry(t, metrics.NewConfigStoreCollector("flags", src))
	for _, c := range []struct {
		name string
		want int64
	}{
		{"asidekit_configstore_rebuilds_total", s.Rebuilds},
		{"asidekit_configstore_rebuild_waits_total", s.RebuildWaits},
		{"asidekit_configstore_rebuilds_lost_total", s.RebuildsLost},
		{"asidekit_configstore_repairs_total", s.Repairs},
		{"asidekit_configstore_mirror_errors_total", s.MirrorErrors},
		{"asidekit_configstore_reconciles_total", s.Reconciles},
		{"asidekit_configstore_fixes_total", s.Fixes},
		{"asidekit_configstore_db_fallbacks_total", s.DBFallbacks},
		{"asidekit_configstore_fallback_queries_total", s.FallbackQueries},
	} {
		if got := gather(t, reg, c.name, "store", "flags").value; got != float64(c.want) {
			t.Errorf("%s = %v, want %d", c.name, got, c.want)
		}
	}
}

func TestConfigStoreCollector_register(t *testing.T) {
	src := statsFunc[configstore.Stats](func() configstore.Stats { return configstore.Stats{} })
	reg := prometheus.NewRegistry()
	if err := reg.Register(metrics.NewConfigStoreCollector("a", src)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(metrics.NewConfigStoreCollector("b", src)); err != nil {
		t.Fatalf("a second store name: %v", err)
	}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(metrics.NewConfigStoreCollector("a", src)); !errors.As(err, &are) {
		t.Fatalf("the same store name again: err = %v, want AlreadyRegisteredError", err)
	}
}

func TestConfigStoreCollector_nilSource(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewConfigStoreCollector(name, nil) did not panic")
		}
	}()
	metrics.NewConfigStoreCollector("x", nil)
}
