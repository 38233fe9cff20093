package cdc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// The writes of a Redis outage reach the cache as soon as Redis answers
// again, whatever is left of the Invalidator's backoff: here every wait
// is an hour, and only the ping of Redis during the wait ends it. With
// the probe off, the same Invalidator is still waiting long after Redis
// is back.
func TestInvalidator_redisBack_appliesAtOnce(t *testing.T) {
	t.Parallel()
	for _, probe := range []bool{true, false} {
		name := "probe"
		if !probe {
			name = "noProbe"
		}
		t.Run(name, func(t *testing.T) {
			srv := testcontainers.NewRedisServer(t)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
			t.Cleanup(func() { _ = rdb.Close() })
			e := newEnv(t, rdb, "ak")
			inv := e.invalidator(t, cdc.Options{StatusInterval: 100 * time.Millisecond})
			cdc.SetRetryBackoff(inv, time.Hour, probe)
			run(t, inv)
			e.sync(t, inv)
			before := inv.Stats()

			srv.Stop()
			e.exec(t, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
			waitFor(t, "a failed attempt to apply", func() bool { return inv.Stats().Errors > before.Errors })
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			if probe {
				e.sync(t, inv)
				if got := e.name(t, 1); got != "Ada" {
					t.Errorf("name = %q, want Ada", got)
				}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := inv.Wait(ctx, e.currentLSN(t)); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("without the probe the Invalidator caught up at once (%v): the test proves nothing", err)
			}
		})
	}
}
