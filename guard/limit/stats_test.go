package limit

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

func TestStats_countOutcomes(t *testing.T) {
	r := testcontainers.Redis(t)
	ctx := context.Background()
	for _, a := range algos {
		t.Run(a.name, func(t *testing.T) {
			lim, err := a.build(r.Client, &Options{Namespace: r.Namespace})
			if err != nil {
				t.Fatal(err)
			}
			key := "stats:" + a.name
			for range 5 { // 3 allowed, then 2 refused
				if _, err := lim.Allow(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			_, _ = lim.AllowN(ctx, key, 0) // invalid
			if got, want := lim.Stats(), (Stats{Allowed: 3, Refused: 2, Errors: 1}); got != want {
				t.Fatalf("Stats = %+v, want %+v", got, want)
			}
		})
	}
	t.Run("semaphore", func(t *testing.T) {
		s, err := NewConcurrency(r.Client, Concurrency{Limit: 1, LeaseTTL: time.Minute}, &Options{Namespace: r.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.TryAcquire(ctx, "stats")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		if _, err := s.TryAcquire(ctx, "stats"); err == nil {
			t.Fatal("second TryAcquire of a 1-slot semaphore succeeded")
		}
		if got, want := s.Stats(), (Stats{Allowed: 1, Refused: 1}); got != want {
			t.Fatalf("Stats = %+v, want %+v", got, want)
		}
	})
	t.Run("fail_open", func(t *testing.T) {
		dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", MaxRetries: -1})
		_ = dead.Close()
		lim, err := NewGCRA(dead, GCRA{Rate: PerMinute(3)}, &Options{Namespace: r.Namespace, FailOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = lim.Allow(ctx, "k")
		if got, want := lim.Stats(), (Stats{Allowed: 1, Errors: 1, FailedOpen: 1}); got != want {
			t.Fatalf("Stats = %+v, want %+v", got, want)
		}
	})
}
