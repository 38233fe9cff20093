package lock_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// cmdCounter is a go-redis hook that records the name of every command a
// client sends.
type cmdCounter struct {
	mu    sync.Mutex
	names []string
}

func (c *cmdCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *cmdCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.names = append(c.names, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *cmdCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		for _, cmd := range cmds {
			c.names = append(c.names, cmd.Name())
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the commands recorded since the last take.
func (c *cmdCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := c.names
	c.names = nil
	return names
}

// serverCalls returns how many times the server ran command name, scripts'
// calls included, from INFO commandstats. Only a private server gives
// exact counts.
func serverCalls(t *testing.T, c redis.Cmdable, name string) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+name+":calls=")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return 0
}

// privateRedis starts a private server, whose command counts belong to
// this test alone, and returns a new client of it.
func privateRedis(t *testing.T) func() *redis.Client {
	t.Helper()
	srv := testcontainers.NewRedisServer(t)
	return func() *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
}

func TestLocker_Release_noWaiterNoPublish(t *testing.T) {
	newClient := privateRedis(t)
	c := newClient()
	hook := &cmdCounter{}
	c.AddHook(hook)
	l := mustNew(t, c, nil)
	defer l.Close()
	ctx := context.Background()

	cycle := func() {
		t.Helper()
		lk, err := l.Obtain(ctx, "r", time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // loads the scripts: EVALSHA, NOSCRIPT, EVAL
	hook.take()
	for i := range 3 {
		cycle()
		if got := hook.take(); strings.Join(got, " ") != "evalsha evalsha" {
			t.Errorf("cycle %d sent %v, want one EVALSHA to obtain and one to release", i, got)
		}
	}
	if n := serverCalls(t, c, "publish"); n != 0 {
		t.Errorf("%d PUBLISH with no waiter, want 0", n)
	}
	// Nobody waited: the shared subscription never started.
	if s := l.Stats(); s.Subscriptions != 0 {
		t.Errorf("Stats = %+v, want no subscription", s)
	}
	if n := c.PubSubNumSub(ctx, "ak:lock:unlocked").Val()["ak:lock:unlocked"]; n != 0 {
		t.Errorf("%d subscribers of the unlock channel, want 0", n)
	}
}

func TestLocker_Release_announcedWhileWaited(t *testing.T) {
	newClient := privateRedis(t)
	admin := newClient()
	a := mustNew(t, newClient(), nil)
	defer a.Close()
	b := mustNew(t, newClient(), nil)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The holder's ttl is far longer than the test: a waiter that missed a
	// notification would sleep past the context's end.
	const ttl = 10 * time.Minute
	held := mustObtain(t, a, "r", ttl)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			lk, err := b.Obtain(ctx, "r", ttl, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if err := lk.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, "both waiters to sleep", func() bool { return lock.Sleeps(b) >= 2 })

	// Each waiter's failed try left a mark that outlasts its sleep: the
	// holder's ttl plus its longest backoff (default 500ms).
	markTTL := admin.PTTL(ctx, "ak:lock:{r}:wait").Val()
	lockTTL := admin.PTTL(ctx, "ak:lock:{r}").Val()
	if markTTL < lockTTL+500*time.Millisecond {
		t.Errorf("mark's ttl %v, lock's %v: the mark ends before the waiter wakes", markTTL, lockTTL)
	}

	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// The holder's release woke one waiter; that waiter's release woke the
	// other, although it had taken the lock meanwhile: the mark stays
	// until it expires, for waiters that still sleep. The last release
	// was announced too.
	if n := serverCalls(t, admin, "publish"); n != 3 {
		t.Errorf("%d PUBLISH for 3 releases while waited for, want 3", n)
	}
	if s := b.Stats(); s.Obtained != 2 || s.WakeupsNotified != 2 || s.WakeupsTimer != 0 {
		t.Errorf("Stats = %+v, want 2 obtained after 2 wake-ups by notification, none by timer", s)
	}
}

func TestRedlock_Release_noWaiterNoPublish(t *testing.T) {
	newClient := privateRedis(t)
	c := newClient()
	r := mustRedlock(t, []redis.UniversalClient{c}, nil)
	ctx := context.Background()
	for range 3 {
		lk := mustObtain(t, r, "r", time.Minute)
		if err := lk.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A Redlock's waiters wake by timer: its releases announce nothing.
	if n := serverCalls(t, c, "publish"); n != 0 {
		t.Errorf("%d PUBLISH, want 0", n)
	}
}
