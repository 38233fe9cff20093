package lock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkObtainRelease compares one uncontended Obtain + Release with
// bsm/redislock's, on the same server and the same key pattern. Both are
// one script round trip each way; asidekit's obtain also increments the
// fencing counter and its release also publishes the unlock notification.
func BenchmarkObtainRelease(b *testing.B) {
	rn := testcontainers.Redis(b)
	ctx := context.Background()
	const ttl = 10 * time.Second

	b.Run("asidekit", func(b *testing.B) {
		l := lock.New(rn.Client, &lock.Options{Namespace: rn.Namespace})
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
		l := lock.New(rn.Client, &lock.Options{Namespace: rn.Namespace})
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
