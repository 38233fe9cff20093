package limit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// With LocalFallback, a limiter whose Redis is down still limits: each
// process allows its share of the limit, with a nil error, and counts it.
func TestLimiter_localFallback(t *testing.T) {
	c, srv := downClient(t)
	ctx := context.Background()
	lims := map[string]Limiter{}
	for _, a := range algos { // each: 3 calls at once, 3 a minute
		l, err := a.build(c, &Options{LocalFallback: 2, FailOpen: true, BreakerThreshold: 2})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := l.Allow(ctx, "k"); err != nil || !res.Allowed || l.Stats().LocalFallbacks != 0 {
			t.Fatalf("%s: Allow with Redis up = %+v, %v, %+v", a.name, res, err, l.Stats())
		}
		lims[a.name] = l
	}
	srv.Stop()
	for name, l := range lims {
		// ceil(3/2) = 2 calls, then refused until the bucket refills
		// (3 a minute / 2 processes: 40 s a call). The breaker opens on
		// the way: the fallback answers then too.
		for i, want := range []bool{true, true, false, false} {
			res, err := l.Allow(ctx, "k")
			if err != nil || res.Allowed != want || res.Limit != 3 {
				t.Fatalf("%s: call %d with Redis down = %+v, %v; want allowed %v, no error", name, i, res, err, want)
			}
			if !want && (res.RetryAfter < 30*time.Second || res.RetryAfter > 41*time.Second) {
				t.Errorf("%s: RetryAfter = %v, want about 40s", name, res.RetryAfter)
			}
		}
		if res, _ := l.Allow(ctx, "other"); !res.Allowed {
			t.Errorf("%s: another key shares the bucket", name)
		}
		st := l.Stats()
		if st.LocalFallbacks != 5 || st.Errors != 0 || st.FailedOpen != 0 || st.Refused != 2 || st.BreakerOpens != 1 {
			t.Errorf("%s: stats %+v, want 5 local fallbacks, 2 refused, no error, the breaker opened once", name, st)
		}
	}
	// A context that ended is no Redis failure: never decided locally.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := lims["gcra"].Allow(cancelled, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Allow(cancelled) = %v, want context.Canceled", err)
	}
}

// Without a failure the fallback is never used, and a negative process
// count means no fallback (Kit.LimitOptions' way to keep it off).
func TestLimiter_localFallbackOptions(t *testing.T) {
	r := testcontainers.Redis(t)
	if g, err := NewGCRA(r.Client, GCRA{Rate: PerSecond(1)}, &Options{LocalFallback: -1}); err != nil || g.(*limiter).local != nil {
		t.Errorf("LocalFallback -1: %v; want a limiter without fallback", err)
	}
	l, err := NewFixedWindow(r.Client, FixedWindow{Limit: 1, Window: time.Minute}, &Options{Namespace: r.Namespace, LocalFallback: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, want := range []bool{true, false} {
		if res, err := l.Allow(ctx, "k"); err != nil || res.Allowed != want {
			t.Fatalf("call %d = %+v, %v, want allowed %v", i, res, err, want)
		}
	}
	if st := l.Stats(); st.LocalFallbacks != 0 {
		t.Errorf("stats %+v: the fallback answered with Redis up", st)
	}
}

// The bucket refills at its share of the rate, up to its share of the
// limit, and idle full buckets are dropped past maxLocalKeys.
func TestLocal_bucket(t *testing.T) {
	now := time.Unix(0, 0)
	l := newLocal(10, Rate{Limit: 10, Period: time.Second}, 2) // 5 at once, 5 a second
	l.now = func() time.Time { return now }
	for i := 0; i < 5; i++ {
		if !l.allow("k", 1, 10).Allowed {
			t.Fatalf("call %d refused", i)
		}
	}
	if res := l.allow("k", 1, 10); res.Allowed || res.RetryAfter != 200*time.Millisecond {
		t.Fatalf("6th call = %+v, want refused for 200ms", res)
	}
	now = now.Add(time.Second)
	if res := l.allow("k", 5, 10); !res.Allowed || res.Remaining != 0 {
		t.Fatalf("after 1s, 5 calls = %+v", res)
	}
	for i := 0; i < maxLocalKeys; i++ {
		l.allow(string(rune('a'+i%26))+time.Duration(i).String(), 1, 10)
	}
	now = now.Add(time.Hour)
	l.allow("new", 1, 10)
	if len(l.buckets) > 2 {
		t.Errorf("%d buckets after an idle hour, want the full ones dropped", len(l.buckets))
	}
}
