package nodeguard

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkGuard is the guard's cost per call, side by side with the
// same call without it: a GET on a real Redis through a client with and
// without the guard's hooks, and the guard's own work around a call that
// does nothing (the breaker check, the context with its deadline, and
// the cancel the next trip fires).
func BenchmarkGuard(b *testing.B) {
	r := testcontainers.Redis(b)
	key := r.Namespace + ":bench"
	for _, guarded := range []bool{false, true} {
		name := "get/bare"
		if guarded {
			name = "get/guarded"
		}
		b.Run(name, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: r.Addrs[0], ContextTimeoutEnabled: true})
			defer c.Close()
			if guarded {
				_, release := Install(c, Options{})
				defer release()
			}
			ctx := context.Background()
			if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Get(ctx, key).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	nop := func(context.Context) error { return nil }
	b.Run("call/bare", func(b *testing.B) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			_ = nop(ctx)
		}
	})
	b.Run("call/guarded", func(b *testing.B) {
		g := New(Options{})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := g.call(ctx, true, nop); err != nil {
				b.Fatal(err)
			}
		}
	})
}
