package peers_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkObtainRelease compares one uncontended Obtain + Release of
// guard/lock with bsm/redislock's, on the same server and the same key
// pattern. Both are one script round trip each way; asidekit's obtain also
// increments the fencing counter, and its release checks for a waiter's
// mark (and, with none, publishes nothing). It lives here, not in
// guard/lock, so that the library's go.mod does not require redislock.
func BenchmarkObtainRelease(b *testing.B) {
	rn := testcontainers.Redis(b)
	ctx := context.Background()
	const ttl = 10 * time.Second

	// Both in turn in each iteration, the first one alternating, so that
	// both meet the same load on a shared machine and server: the fair
	// comparison when other processes come and go. Reported per library.
	b.Run("alternating", func(b *testing.B) {
		l := mustNew(b, rn.Client, &lock.Options{Namespace: rn.Namespace})
		defer l.Close()
		c := redislock.New(rn.Client)
		key := rn.Namespace + ":lock:{bench-alt}"
		ours := func() {
			lk, err := l.Obtain(ctx, "bench-alt", ttl, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		theirs := func() {
			lk, err := c.Obtain(ctx, key, ttl, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
		var n int
		var spent [2]time.Duration // asidekit, redislock
		for b.Loop() {
			first, second := ours, theirs
			i, j := 0, 1
			if n%2 == 1 {
				first, second, i, j = theirs, ours, 1, 0
			}
			t0 := time.Now()
			first()
			t1 := time.Now()
			second()
			spent[i] += t1.Sub(t0)
			spent[j] += time.Since(t1)
			n++
		}
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(n), "asidekit-ns/op")
		b.ReportMetric(float64(spent[1].Nanoseconds())/float64(n), "redislock-ns/op")
	})

	b.Run("asidekit", func(b *testing.B) {
		l := mustNew(b, rn.Client, &lock.Options{Namespace: rn.Namespace})
		defer l.Close()
		for b.Loop() {
			lk, err := l.Obtain(ctx, "bench", ttl, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("redislock", func(b *testing.B) {
		c := redislock.New(rn.Client)
		key := rn.Namespace + ":lock:{bench-rl}"
		for b.Loop() {
			lk, err := c.Obtain(ctx, key, ttl, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := lk.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})

	// In parallel, each goroutine on its own lock name.
	b.Run("asidekit-parallel", func(b *testing.B) {
		l := mustNew(b, rn.Client, &lock.Options{Namespace: rn.Namespace})
		defer l.Close()
		var id atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			name := "bench-p" + strconv.FormatInt(id.Add(1), 10)
			for pb.Next() {
				lk, err := l.Obtain(ctx, name, ttl, nil)
				if err != nil {
					b.Error(err)
					return
				}
				if err := lk.Release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("redislock-parallel", func(b *testing.B) {
		c := redislock.New(rn.Client)
		var id atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			key := rn.Namespace + ":lock:{bench-rlp" + strconv.FormatInt(id.Add(1), 10) + "}"
			for pb.Next() {
				lk, err := c.Obtain(ctx, key, ttl, nil)
				if err != nil {
					b.Error(err)
					return
				}
				if err := lk.Release(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// mustNew returns lock.New(client, opts) or fails the benchmark.
func mustNew(b testing.TB, client redis.UniversalClient, opts *lock.Options) *lock.Locker {
	b.Helper()
	l, err := lock.New(client, opts)
	if err != nil {
		b.Fatalf("lock.New: %v", err)
	}
	return l
}
