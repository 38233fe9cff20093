package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/testcontainers"
)

// commands counts the commands a client sends (those that set up a new
// connection included), the limiters' own among them (scripts and DEL),
// and those not yet answered.
type commands struct{ sent, own, open atomic.Int64 }

func (c *commands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (c *commands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.sent.Add(1)
		switch cmd.Name() {
		case "evalsha", "eval", "del":
			c.own.Add(1)
		}
		c.open.Add(1)
		defer c.open.Add(-1)
		return next(ctx, cmd)
	}
}

// proxied returns a client of r's Redis through a fault proxy, with
// go-redis's default timeouts and retries (a read waits 3 s), and the
// counter of its commands.
func proxied(t *testing.T, r *testcontainers.RedisNamespace, ctxTimeout bool) (*redis.Client, *faultproxy.Proxy, *commands) {
	t.Helper()
	if r.Cluster {
		t.Skip("one proxy in front of one standalone server")
	}
	p, err := faultproxy.New(r.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: ctxTimeout})
	t.Cleanup(func() { _ = c.Close() })
	var n commands
	c.AddHook(&n)
	return c, p, &n
}

// fakeClock is a breaker's clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// until polls cond until it holds, failing the test after a minute.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// With Redis cut or stalled, a limiter fails by its policy until the
// breaker opens; then it answers at once, with no Redis command at all,
// one probe per cooldown; once Redis is back a probe closes the breaker and
// the limit is exact again.
func TestLimiter_breaker(t *testing.T) {
	r := testcontainers.Redis(t)
	const (
		threshold = 3
		cooldown  = time.Minute // on the fake clock
		bypassed  = 50
	)
	for _, fault := range []string{"cut", "stall", "stall_ctxTimeout"} {
		for _, failOpen := range []bool{false, true} {
			name := fault + "/fail_closed"
			if failOpen {
				name = fault + "/fail_open"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				c, p, cmds := proxied(t, r, fault == "stall_ctxTimeout")
				l, err := NewGCRA(c, GCRA{Rate: PerMinute(3)}, &Options{
					Namespace: r.Namespace, FailOpen: failOpen,
					Timeout: 300 * time.Millisecond, BreakerThreshold: threshold, BreakerCooldown: cooldown,
				})
				if err != nil {
					t.Fatal(err)
				}
				lim := l.(*limiter)
				clock := &fakeClock{t: time.Now()}
				lim.g.br.Clock = clock.now
				byPolicy := func(res Result, err error) bool {
					if failOpen {
						return res.Allowed && errors.Is(err, ErrFailedOpen)
					}
					return !res.Allowed && err != nil && !errors.Is(err, ErrFailedOpen)
				}
				key := "breaker:" + name
				if res, err := lim.Allow(ctx, key); err != nil || !res.Allowed {
					t.Fatalf("Allow with Redis up = %+v, %v", res, err)
				}

				if fault == "cut" {
					p.Cut()
				} else {
					p.Stall()
				}
				// threshold calls ask Redis and fail by the policy; with a
				// stall, at the limiter's deadline, not the client's 3 s.
				for i := range threshold {
					res, err := lim.Allow(ctx, key)
					if !byPolicy(res, err) || errors.Is(err, ErrBreakerOpen) {
						t.Fatalf("call %d with Redis down = %+v, %v; want by policy, from Redis", i+1, res, err)
					}
					if fault != "cut" && !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("call %d with Redis stalled = %v; want the limiter's deadline", i+1, err)
					}
				}
				if s := lim.Stats(); s.BreakerOpens != 1 || s.Bypassed != 0 {
					t.Fatalf("after %d failures: Stats %+v; want the breaker open once, nothing bypassed", threshold, s)
				}

				// Open: answered by the policy, with no command sent.
				sent := cmds.sent.Load()
				for i := range bypassed {
					res, err := lim.Allow(ctx, key)
					if !byPolicy(res, err) || !errors.Is(err, ErrBreakerOpen) {
						t.Fatalf("call %d with the breaker open = %+v, %v; want by policy, ErrBreakerOpen", i+1, res, err)
					}
					if !failOpen && (res.RetryAfter <= 0 || res.RetryAfter > cooldown) {
						t.Fatalf("fail-closed RetryAfter %v, want the rest of the cooldown", res.RetryAfter)
					}
				}
				if n := cmds.sent.Load() - sent; n != 0 {
					t.Fatalf("%d calls with the breaker open sent %d commands, want 0", bypassed, n)
				}
				s := lim.Stats()
				wantErrors := uint64(threshold + bypassed)
				if s.Bypassed != bypassed || s.Errors != wantErrors || s.BreakerOpens != 1 {
					t.Fatalf("Stats %+v; want %d bypassed of %d errors", s, bypassed, wantErrors)
				}
				if failOpen && s.FailedOpen != wantErrors {
					t.Fatalf("Stats %+v; want %d failed open", s, wantErrors)
				}

				// After the cooldown one call probes, fails, and the
				// breaker stays open for another cooldown.
				clock.add(cooldown)
				own := cmds.own.Load()
				if res, err := lim.Allow(ctx, key); !byPolicy(res, err) || errors.Is(err, ErrBreakerOpen) {
					t.Fatalf("probe with Redis down = %+v, %v; want by policy, from Redis", res, err)
				}
				if n := cmds.own.Load() - own; n != 1 {
					t.Fatalf("the probe sent %d scripts, want 1", n)
				}
				sent = cmds.sent.Load()
				if _, err := lim.Allow(ctx, key); !errors.Is(err, ErrBreakerOpen) || cmds.sent.Load() != sent {
					t.Fatalf("after a failed probe: %v, %d commands; want the breaker open again", err, cmds.sent.Load()-sent)
				}

				// Redis back: once the calls held by the stall are answered
				// (late: they may have counted), a probe closes the breaker.
				p.Heal()
				until(t, "the held commands", func() bool { return cmds.open.Load() == 0 })
				for probes := 0; ; probes++ {
					if probes == 10 {
						t.Fatal("10 probes with Redis back, none closed the breaker")
					}
					clock.add(cooldown)
					if _, err := lim.Allow(ctx, key); err == nil {
						break
					}
				}
				if lim.g.br.Open() {
					t.Fatal("a probe succeeded and the breaker is still open")
				}
				// Exact again, on a fresh key: 3 allowed, then refused.
				fresh := key + ":after"
				own = cmds.own.Load()
				for i, want := range []bool{true, true, true, false} {
					if res, err := lim.Allow(ctx, fresh); err != nil || res.Allowed != want {
						t.Fatalf("call %d after the heal = %+v, %v; want allowed %v", i+1, res, err, want)
					}
				}
				if n := cmds.own.Load() - own; n != 4 {
					t.Fatalf("4 calls after the heal sent %d scripts, want 4", n)
				}
			})
		}
	}
}

// A Semaphore and its leases go through the breaker as well.
func TestSemaphore_breaker(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	c, p, cmds := proxied(t, r, false)
	s, err := NewConcurrency(c, Concurrency{Limit: 2}, &Options{Namespace: r.Namespace, Timeout: 100 * time.Millisecond, BreakerThreshold: 2, BreakerCooldown: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	held, err := s.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	for range 2 {
		if l, err := s.TryAcquire(ctx, "k"); l != nil || err == nil || errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("TryAcquire with Redis cut = %v, %v; want the Redis error", l, err)
		}
	}
	sent := cmds.sent.Load()
	if l, err := s.Acquire(ctx, "k"); l != nil || !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("Acquire with the breaker open = %v, %v; want ErrBreakerOpen at once", l, err)
	}
	if err := held.Release(ctx); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("Release with the breaker open = %v; want ErrBreakerOpen", err)
	}
	if err := s.Reset(ctx, "k"); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("Reset with the breaker open = %v; want ErrBreakerOpen", err)
	}
	if n := cmds.sent.Load() - sent; n != 0 {
		t.Fatalf("%d commands sent with the breaker open, want 0", n)
	}
	if st := s.Stats(); st.Bypassed != 1 || st.BreakerOpens != 1 || st.Errors != 3 {
		t.Fatalf("Stats %+v; want 1 bypassed of 3 errors, opened once", st)
	}
}

// A script's error is the server at work: it never opens the breaker.
func TestBreaker_scriptErrorsAreNoFailures(t *testing.T) {
	for _, tc := range []struct {
		err  error
		down bool
	}{
		{context.DeadlineExceeded, true},
		{redis.ErrClosed, true},
		{errors.New("dial tcp: connection refused"), true},
		{redis.ErrPoolTimeout, true},
	} {
		if got := unavailable(tc.err); got != tc.down {
			t.Errorf("unavailable(%v) = %v, want %v", tc.err, got, tc.down)
		}
	}
	r := testcontainers.Redis(t)
	ctx := context.Background()
	// A key of the wrong type makes the script fail on the server.
	l, err := NewGCRA(r.Client, GCRA{Rate: PerMinute(3)}, &Options{Namespace: r.Namespace, BreakerThreshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	k, _ := stateKey(r.Namespace, "gcra", "wrongtype")
	if err := r.Client.LPush(ctx, k, "x").Err(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.Allow(ctx, "wrongtype"); err == nil || errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("Allow on a list = %v; want the script's error", err)
		}
	}
	if st := l.Stats(); st.BreakerOpens != 0 {
		t.Fatalf("script errors opened the breaker: %+v", st)
	}
	if !unavailable(errors.Join(errors.New("x"), context.Canceled)) {
		t.Error("a non-reply error is a failure")
	}
}
