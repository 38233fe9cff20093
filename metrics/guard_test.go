package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/testcontainers"
)

// countHook counts the commands a client sends.
type countHook struct{ n *atomic.Int64 }

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// The guard's collector reports the node's breaker, closed then open
// while Redis is stopped (the scrape answering 200), and a scrape sends
// Redis no command.
func TestGuardCollector(t *testing.T) {
	srv := testcontainers.NewRedisServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: asidekit.RecommendedTimeout,
		ReadTimeout: asidekit.RecommendedTimeout, WriteTimeout: asidekit.RecommendedTimeout, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	kit, err := asidekit.New(asidekit.Config{Namespace: "shop", Redis: rdb, Guard: &asidekit.GuardOptions{Threshold: 1, Cooldown: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kit.Close() })
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A fill learns the Kit's epoch marker (cacheaside's settle window),
	// which New otherwise learns in the background: its commands are not
	// the scrape's.
	e, err := asidekit.NewEntity[string](kit, "warm", cacheaside.Policy{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(ctx, "1", func(context.Context, string) (string, error) { return "v", nil }); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	rdb.AddHook(countHook{&sent})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewGuardCollector("svc", kit))
	web := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(web.Close)
	check := func(when string, down int) {
		t.Helper()
		resp, err := http.Get(web.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: /metrics answered %d", when, resp.StatusCode)
		}
		want := fmt.Sprintf(`
# HELP asidekit_guard_node_down 1 while the node's breaker is open.
# TYPE asidekit_guard_node_down gauge
asidekit_guard_node_down{kit="svc",node=%q} %d
# HELP asidekit_guard_nodes_down Redis nodes whose breaker is open: calls to them fail at once.
# TYPE asidekit_guard_nodes_down gauge
asidekit_guard_nodes_down{kit="svc"} %d
# HELP asidekit_guard_node_opens_total Times the node's breaker opened.
# TYPE asidekit_guard_node_opens_total counter
asidekit_guard_node_opens_total{kit="svc",node=%q} %d
`, srv.Addr, down, down, srv.Addr, down)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	before := sent.Load()
	check("healthy", 0)
	if n := sent.Load() - before; n != 0 {
		t.Errorf("the scrapes sent Redis %d commands", n)
	}
	srv.Stop()
	t.Cleanup(func() { _ = srv.Start() })
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatal("ping answered with Redis stopped")
	}
	check("Redis stopped", 1)
}
