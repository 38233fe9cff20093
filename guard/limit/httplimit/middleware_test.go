package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/guard/limit/httplimit"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/testcontainers"
)

// served counts the requests that reach the handler.
type served struct{ n atomic.Int64 }

func (s *served) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.n.Add(1)
	_, _ = w.Write([]byte("ok"))
}

func get(t *testing.T, h http.Handler, remote string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/products", nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestMiddleware_limitsPerClientIP(t *testing.T) {
	r := testcontainers.Redis(t)
	lim, err := limit.NewTokenBucket(r.Client, limit.TokenBucket{Rate: limit.PerMinute(2)}, &limit.Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	mw, err := httplimit.New(lim, &httplimit.Options{Window: time.Minute, Policy: "per-ip"})
	if err != nil {
		t.Fatal(err)
	}
	var s served
	h := mw.Handler(&s)

	for i, wantR := range []int{1, 0} {
		rec := get(t, h, "192.0.2.1:1234")
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d: status %d, want 200", i, rec.Code)
		}
		if p := rec.Header().Get("RateLimit-Policy"); p != `"per-ip";q=2;w=60` {
			t.Fatalf("RateLimit-Policy %q", p)
		}
		rl := rec.Header().Get("RateLimit")
		var gotR, gotT int
		if _, err := fmt.Sscanf(rl, `"per-ip";r=%d;t=%d`, &gotR, &gotT); err != nil || gotR != wantR || gotT < 1 || gotT > 60 {
			t.Fatalf("request %d: RateLimit %q, want r=%d and t in [1, 60]", i, rl, wantR)
		}
		if rec.Header().Get("Retry-After") != "" {
			t.Fatalf("allowed request %d has Retry-After", i)
		}
	}
	// The third within the minute is refused, without reaching the handler.
	rec := get(t, h, "192.0.2.1:5678")
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("third request: status %d, want 429", rec.Code)
	}
	ra, err := strconv.Atoi(rec.Header().Get("Retry-After"))
	if err != nil || ra < 1 || ra > 30 {
		t.Fatalf("Retry-After %q, want 1 to 30 s (one token per 30 s)", rec.Header().Get("Retry-After"))
	}
	if rl := rec.Header().Get("RateLimit"); rl != fmt.Sprintf(`"per-ip";r=0;t=%d`, ra) {
		t.Fatalf("refused RateLimit %q, want r=0 and t = Retry-After", rl)
	}
	if n := s.n.Load(); n != 2 {
		t.Fatalf("handler served %d requests, want 2", n)
	}
	// Another client has its own bucket.
	if rec := get(t, h, "198.51.100.7:80"); rec.Code != http.StatusOK {
		t.Fatalf("another IP: status %d", rec.Code)
	}
}

func TestClientIP_IPv6SharesItsSlash64(t *testing.T) {
	r := testcontainers.Redis(t)
	lim, err := limit.NewGCRA(r.Client, limit.GCRA{Rate: limit.PerMinute(1)}, &limit.Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	mw, err := httplimit.New(lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := mw.Handler(&served{})
	if rec := get(t, h, "[2001:db8:1:2::1]:443"); rec.Code != http.StatusOK {
		t.Fatalf("first address of the /64: %d", rec.Code)
	}
	if rec := get(t, h, "[2001:db8:1:2:ffff::9]:443"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("another address of the same /64: %d, want 429", rec.Code)
	}
	if rec := get(t, h, "[2001:db8:1:3::1]:443"); rec.Code != http.StatusOK {
		t.Fatalf("another /64: %d", rec.Code)
	}
	for in, want := range map[string]string{
		"192.0.2.1:80":           "192.0.2.1",
		"[::ffff:192.0.2.1]:80":  "192.0.2.1",
		"[fe80::1%eth0]:80":      "fe80::/64",
		"[2001:db8::abcd]:12345": "2001:db8::/64",
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = in
		if got, err := httplimit.ClientIP(req); err != nil || got != want {
			t.Errorf("ClientIP(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestForwardedFor_takesTheAddressTheProxyAdded(t *testing.T) {
	key := httplimit.ForwardedFor(1)
	for _, c := range []struct {
		xff  []string
		want string
	}{
		{[]string{"203.0.113.9"}, "203.0.113.9"},
		// A client-written address comes first: ignored.
		{[]string{"10.9.9.9, 203.0.113.9"}, "203.0.113.9"},
		{[]string{"10.9.9.9", "203.0.113.9"}, "203.0.113.9"},
		// Nothing usable: the peer (the proxy).
		{nil, "192.0.2.50"},
		{[]string{"garbage"}, "192.0.2.50"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "192.0.2.50:4000"
		for _, v := range c.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		if got, err := key(req); err != nil || got != c.want {
			t.Errorf("ForwardedFor(1) with %q = %q, %v; want %q", c.xff, got, err, c.want)
		}
	}
}

// When Redis fails the request is answered 503 without reaching the
// handler (fail closed), or served (a FailOpen limiter).
func TestMiddleware_redisDown(t *testing.T) {
	r := testcontainers.Redis(t)
	// A client closed before use: every command fails at once.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
	_ = dead.Close()
	for _, failOpen := range []bool{false, true} {
		lim, err := limit.NewGCRA(dead, limit.GCRA{Rate: limit.PerMinute(5)}, &limit.Options{Namespace: r.Namespace, FailOpen: failOpen})
		if err != nil {
			t.Fatal(err)
		}
		mw, err := httplimit.New(lim, nil)
		if err != nil {
			t.Fatal(err)
		}
		var s served
		rec := get(t, mw.Handler(&s), "192.0.2.1:1")
		want, wantServed := http.StatusServiceUnavailable, int64(0)
		if failOpen {
			want, wantServed = http.StatusOK, 1
		}
		if rec.Code != want || s.n.Load() != wantServed {
			t.Fatalf("FailOpen %v with Redis down: status %d, served %d; want %d, %d", failOpen, rec.Code, s.n.Load(), want, wantServed)
		}
	}
}

// A key that cannot be made is a 400 (or what OnError writes), and bad
// options are refused.
func TestMiddleware_badKeyAndOptions(t *testing.T) {
	r := testcontainers.Redis(t)
	lim, err := limit.NewGCRA(r.Client, limit.GCRA{Rate: limit.PerMinute(5)}, &limit.Options{Namespace: r.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	mw, err := httplimit.New(lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	var s served
	if rec := get(t, mw.Handler(&s), "not an address"); rec.Code != http.StatusBadRequest || s.n.Load() != 0 {
		t.Fatalf("unparsable RemoteAddr: status %d, served %d; want 400, 0", rec.Code, s.n.Load())
	}
	var seen error
	mw, err = httplimit.New(lim, &httplimit.Options{
		Key: func(*http.Request) (string, error) { return "", errors.New("no session") },
		OnError: func(w http.ResponseWriter, _ *http.Request, err error) {
			seen = err
			w.WriteHeader(http.StatusUnauthorized)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec := get(t, mw.Handler(&s), "192.0.2.1:1"); rec.Code != http.StatusUnauthorized || seen == nil {
		t.Fatalf("Key error with OnError: status %d, OnError saw %v", rec.Code, seen)
	}
	for name, o := range map[string]*httplimit.Options{
		"policy with a quote": {Policy: `a"b`},
		"negative window":     {Window: -time.Second},
	} {
		if _, err := httplimit.New(lim, o); !errors.Is(err, limit.ErrInvalid) {
			t.Errorf("New with %s: %v, want limit.ErrInvalid", name, err)
		}
	}
	if _, err := httplimit.New(nil, nil); !errors.Is(err, limit.ErrInvalid) {
		t.Errorf("New(nil): %v, want limit.ErrInvalid", err)
	}
}

func TestStatusOf(t *testing.T) {
	for err, want := range map[error]int{
		nil:                                      200,
		fmt.Errorf("x: %w", limit.ErrFailedOpen): 200,
		limit.ErrLimited:                         429,
		limit.ErrLeaseLost:                       409,
		fmt.Errorf("k: %w", limit.ErrInvalid):    400,
		context.Canceled:                         499,
		context.DeadlineExceeded:                 503,
		errors.New("dial tcp: refused"):          503,
	} {
		if got := httplimit.StatusOf(err); got != want {
			t.Errorf("StatusOf(%v) = %d, want %d", err, got, want)
		}
	}
}

// With Redis stalled and a fail-closed limiter, requests are answered 503
// with Retry-After: the first few at the limiter's deadline (not the
// client's 3 s read timeout), then, with its breaker open, without asking
// Redis at all.
func TestMiddleware_redisStalled(t *testing.T) {
	r := testcontainers.Redis(t)
	if r.Cluster {
		t.Skip("one proxy in front of one standalone server")
	}
	p, err := faultproxy.New(r.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	defer c.Close()
	const threshold = 2
	lim, err := limit.NewGCRA(c, limit.GCRA{Rate: limit.PerMinute(5)}, &limit.Options{
		Namespace: r.Namespace, Timeout: 300 * time.Millisecond, BreakerThreshold: threshold, BreakerCooldown: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	mw, err := httplimit.New(lim, nil)
	if err != nil {
		t.Fatal(err)
	}
	var s served
	h := mw.Handler(&s)
	if rec := get(t, h, "192.0.2.1:1"); rec.Code != http.StatusOK {
		t.Fatalf("Redis up: status %d", rec.Code)
	}
	p.Stall()
	for i := range threshold + 20 {
		rec := get(t, h, "192.0.2.1:1")
		ra, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
		if rec.Code != http.StatusServiceUnavailable || ra < 1 {
			t.Fatalf("request %d with Redis stalled: status %d, Retry-After %q; want 503 with Retry-After", i, rec.Code, rec.Header().Get("Retry-After"))
		}
		if i >= threshold && ra < 3000 {
			t.Fatalf("request %d, breaker open: Retry-After %d, want the cooldown's rest (about 3600)", i, ra)
		}
	}
	if st := lim.Stats(); st.Bypassed != 20 || st.BreakerOpens != 1 || s.n.Load() != 1 {
		t.Fatalf("Stats %+v, served %d; want 20 bypassed, the handler reached only before the stall", st, s.n.Load())
	}
}
