package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// /metrics, served as docs/metrics.md configures it, answers 200 while the
// service's Redis is down, with the collectors that read Redis at scrape
// time (the Bloom filter's) reporting it and the limiter's and seqgen's
// fallbacks counted.
func TestMetricsEndpoint_redisOutage(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: asidekit.RecommendedTimeout,
		ReadTimeout: asidekit.RecommendedTimeout, WriteTimeout: asidekit.RecommendedTimeout, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	obs, err := metrics.NewCacheObserver(nil)
	if err != nil {
		t.Fatal(err)
	}
	kit, err := asidekit.New(asidekit.Config{Namespace: "shop", Redis: rdb, DB: pg.DB, Cache: &cacheaside.Options{Observer: obs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close() })
	ctx := context.Background()
	f, err := kit.Filter("slugs", &bloom.Options{Capacity: 1000, FalsePositiveRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	lim, err := limit.NewGCRA(rdb, limit.GCRA{Rate: limit.PerSecond(100)}, kit.LimitOptions(&limit.Options{FailOpen: true}))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := kit.Generator(&seqgen.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gen.Close() })
	if err := f.Add(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(obs, metrics.NewBloomCollector("slugs", f), metrics.NewLimitCollector("api", lim), metrics.NewSeqgenCollector("orders", gen))
	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(web.Close)
	scrape := func(when string) string {
		t.Helper()
		resp, err := http.Get(web.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: /metrics answered %d:\n%s", when, resp.StatusCode, body)
		}
		return string(body)
	}
	scrape("before the outage")

	srv.Stop()
	for range 3 {
		if _, err := lim.Allow(ctx, "client"); err == nil {
			t.Fatal("limiter: no error with Redis stopped")
		}
		if _, err := gen.Next(ctx, "ORD"); err != nil {
			t.Fatalf("seqgen during the outage: %v", err)
		}
	}
	body := scrape("during the outage")
	for _, want := range []string{`asidekit_bloom_up{filter="slugs"} 0`, `asidekit_limit_failed_open_total{limiter="api"} 3`} {
		if !strings.Contains(body, want) {
			t.Errorf("during the outage: no %q in\n%s", want, body)
		}
	}
	if !strings.Contains(body, `asidekit_seqgen_fallbacks_total{generator="orders"}`) || strings.Contains(body, `asidekit_seqgen_fallbacks_total{generator="orders"} 0`) {
		t.Errorf("during the outage: no seqgen fallback counted in\n%s", body)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
}
