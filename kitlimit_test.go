package asidekit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/guard/limit/httplimit"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/testcontainers"
)

// A Kit's limiter, on its defaults, behind httplimit: through a Redis cut
// and a stall at least 99% of the requests are served (the old default,
// fail closed, refused them all with 503), a key over its local share is
// still refused (429), and during the stall the node guard opens, so
// that the requests after the first few do not each wait the limiter's
// 250 ms call bound. Both with go-redis's default client options and
// with README's (RecommendedTimeout, ContextTimeoutEnabled).
func TestKit_limiterDefaults_outage(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts redis.Options
	}{
		{"go-redis defaults", redis.Options{}},
		{"recommended", redis.Options{DialTimeout: asidekit.RecommendedTimeout, ReadTimeout: asidekit.RecommendedTimeout,
			WriteTimeout: asidekit.RecommendedTimeout, ContextTimeoutEnabled: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testcontainers.Redis(t)
			px, err := faultproxy.New(r.Addrs[0])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = px.Close() })
			co := tc.opts
			co.Addr = px.Addr()
			c := redis.NewClient(&co)
			t.Cleanup(func() { _ = c.Close() })
			kit, err := asidekit.New(asidekit.Config{Namespace: r.Namespace + "svc", Redis: c})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kit.Close() })
			const burst = 5
			lim, err := limit.NewGCRA(c, limit.GCRA{Rate: limit.PerMinute(burst)}, kit.LimitOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			mw, err := httplimit.New(lim, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
			client := 0
			request := func(ip string) (int, time.Duration) {
				req := httptest.NewRequest(http.MethodGet, "/products/1", nil)
				req.RemoteAddr = ip + ":1234"
				rec := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(rec, req)
				return rec.Code, time.Since(start)
			}
			// phase sends n requests, each from a client of its own, and
			// returns how many were served and how many took the
			// limiter's whole call bound or longer.
			phase := func(n int) (served, slow int) {
				for range n {
					client++
					code, took := request("10.0." + strconv.Itoa(client/250) + "." + strconv.Itoa(client%250))
					if code == http.StatusOK {
						served++
					}
					if took >= limit.DefaultTimeout {
						slow++
					}
				}
				return served, slow
			}
			if served, _ := phase(10); served != 10 {
				t.Fatalf("Redis up: %d of 10 requests served", served)
			}
			const n = 300
			for _, fault := range []string{"cut", "stall"} {
				opens := opensOf(kit)
				if fault == "cut" {
					px.Cut()
				} else {
					px.Stall()
				}
				served, slow := phase(n)
				if served*100 < n*99 {
					t.Errorf("%s: %d of %d requests served, want >= 99%%", fault, served, n)
				}
				// The local limit still limits: one client's burst, then 429.
				var codes []int
				for range burst + 2 {
					code, _ := request("192.0.2." + strconv.Itoa(len(fault)))
					codes = append(codes, code)
				}
				if codes[burst-1] != http.StatusOK || codes[burst] != http.StatusTooManyRequests || codes[burst+1] != http.StatusTooManyRequests {
					t.Errorf("%s: one client's %d requests got %v; want %d served, then 429", fault, burst+2, codes, burst)
				}
				if opensOf(kit) == opens {
					t.Errorf("%s: the node guard never opened", fault)
				}
				if slow > n/10 {
					t.Errorf("%s: %d of %d requests waited the limiter's %v bound or more: the guard did not spare them", fault, slow, n, limit.DefaultTimeout)
				}
				if st := lim.Stats(); st.LocalFallbacks == 0 {
					t.Errorf("%s: no call fell back to the local limit: %+v", fault, st)
				}
				px.Heal()
				waitNodesUp(t, kit)
				if _, err := lim.Allow(context.Background(), "after-"+fault); err != nil {
					t.Fatalf("after the %s: %v", fault, err)
				}
			}
		})
	}
}

// A limiter told to keep no fallback (LocalFallback -1) refuses every
// call while Redis is cut: the way to keep the old fail-closed policy.
func TestKit_limitOptions_failClosed(t *testing.T) {
	kit, px, _ := guardedKit(t, nil, nil)
	lim, err := limit.NewGCRA(kit.Cache().Client(), limit.GCRA{Rate: limit.PerSecond(100)}, kit.LimitOptions(&limit.Options{LocalFallback: -1}))
	if err != nil {
		t.Fatal(err)
	}
	px.Cut()
	defer px.Heal()
	for i := range 5 {
		if res, err := lim.Allow(context.Background(), "k"); res.Allowed || err == nil || errors.Is(err, limit.ErrFailedOpen) {
			t.Fatalf("call %d during the cut: %+v, %v; want refused with the error", i, res, err)
		}
	}
	o := kit.LimitOptions(nil)
	if o.LocalFallback != 1 || !o.FailOpen {
		t.Errorf("LimitOptions(nil) = LocalFallback %d, FailOpen %v; want 1 (Config.Processes' default), true", o.LocalFallback, o.FailOpen)
	}
	if o := kit.LimitOptions(&limit.Options{FailOpen: true}); o.LocalFallback != 0 {
		t.Errorf("LimitOptions(FailOpen) set LocalFallback %d: an explicit fail-open limiter gets no local limit", o.LocalFallback)
	}
}

// opensOf returns how many times the Kit's node guards opened.
func opensOf(kit *asidekit.Kit) uint64 {
	var n uint64
	for _, nd := range kit.RedisNodes() {
		n += nd.Opens
	}
	return n
}

// waitNodesUp waits until the guard's prober finds every node back.
func waitNodesUp(t *testing.T, kit *asidekit.Kit) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for kit.RedisNodesDown() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the guard's breaker still open 30 s after the heal")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
