package limit_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/guard/limit"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// exampleClient connects to the Redis of $ASIDEKIT_REDIS_ADDR, or the local
// one.
func exampleClient() *redis.Client {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	return redis.NewClient(&redis.Options{Addr: addr})
}

// unique returns a key no other run uses.
func unique(prefix string) string {
	return prefix + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func ExampleNewGCRA() {
	rdb := exampleClient()
	defer rdb.Close()
	ctx := context.Background()

	// 5 calls per second, at most 2 at once.
	lim, err := limit.NewGCRA(rdb, limit.GCRA{Rate: limit.PerSecond(5), Burst: 2}, nil)
	if err != nil {
		panic(err)
	}
	key := unique("example:api:")
	defer lim.Reset(ctx, key)

	for range 3 {
		res, err := lim.Allow(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry within 200ms=%v\n",
			res.Allowed, res.Remaining, res.RetryAfter > 0 && res.RetryAfter <= 200*time.Millisecond)
	}
	// Output:
	// allowed=true remaining=1 retry within 200ms=false
	// allowed=true remaining=0 retry within 200ms=false
	// allowed=false remaining=0 retry within 200ms=true
}

func ExampleNewFixedWindow_lockout() {
	rdb := exampleClient()
	defer rdb.Close()
	ctx := context.Background()

	// Three login attempts per minute; the fourth locks the account for 15
	// minutes.
	lim, err := limit.NewFixedWindow(rdb, limit.FixedWindow{Limit: 3, Window: time.Minute, LockTime: 15 * time.Minute}, nil)
	if err != nil {
		panic(err)
	}
	key := unique("example:login:bob@example.com:")
	defer lim.Reset(ctx, key)

	for i := 1; i <= 5; i++ {
		res, err := lim.Allow(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("attempt %d: allowed=%v", i, res.Allowed)
		if !res.Allowed {
			fmt.Printf(", try again in %v", res.RetryAfter.Round(time.Minute))
		}
		fmt.Println()
	}
	// Output:
	// attempt 1: allowed=true
	// attempt 2: allowed=true
	// attempt 3: allowed=true
	// attempt 4: allowed=false, try again in 15m0s
	// attempt 5: allowed=false, try again in 15m0s
}

func ExampleLimiter_Wait() {
	rdb := exampleClient()
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// At most 2 calls in any 100 ms: the third waits for the first to
	// leave the window instead of being dropped.
	lim, err := limit.NewSlidingLog(rdb, limit.SlidingLog{Limit: 2, Window: 100 * time.Millisecond}, nil)
	if err != nil {
		panic(err)
	}
	key := unique("example:mailer:")
	defer lim.Reset(ctx, key)

	start := time.Now()
	for range 3 {
		if err := lim.Wait(ctx, key); err != nil {
			panic(err)
		}
	}
	fmt.Println("3 calls sent; waited:", time.Since(start) >= 90*time.Millisecond)
	// Output: 3 calls sent; waited: true
}

func ExampleNewConcurrency() {
	rdb := exampleClient()
	defer rdb.Close()
	ctx := context.Background()

	// One report export at a time per tenant; a crashed exporter's slot
	// comes back after a minute.
	sem, err := limit.NewConcurrency(rdb, limit.Concurrency{Limit: 1, LeaseTTL: time.Minute}, nil)
	if err != nil {
		panic(err)
	}
	key := unique("example:export:tenant-7:")
	defer sem.Reset(ctx, key)

	lease, err := sem.Acquire(ctx, key)
	if err != nil {
		panic(err)
	}
	_, err = sem.TryAcquire(ctx, key)
	fmt.Println("second export refused:", errors.Is(err, limit.ErrLimited))

	if err := lease.Release(ctx); err != nil {
		panic(err)
	}
	lease, err = sem.TryAcquire(ctx, key)
	fmt.Println("after release:", err == nil)
	_ = lease.Release(ctx)
	// Output:
	// second export refused: true
	// after release: true
}

func ExampleOptions_failOpen() {
	// A Redis that does not answer (nothing listens on port 1).
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	defer rdb.Close()
	ctx := context.Background()
	rate := limit.GCRA{Rate: limit.PerSecond(10)}

	closed, _ := limit.NewGCRA(rdb, rate, nil) // the default: fail closed
	res, err := closed.Allow(ctx, "k")
	fmt.Println("fail closed: allowed =", res.Allowed, "error =", err != nil)

	open, _ := limit.NewGCRA(rdb, rate, &limit.Options{FailOpen: true})
	res, err = open.Allow(ctx, "k")
	fmt.Println("fail open:   allowed =", res.Allowed, "error =", errors.Is(err, limit.ErrFailedOpen))
	// Output:
	// fail closed: allowed = false error = true
	// fail open:   allowed = true error = true
}

func ExampleNewTokenBucket() {
	rdb := exampleClient()
	defer rdb.Close()
	ctx := context.Background()

	// A bucket of 3 tokens refilled at 1 per second: a burst of 3, then 1/s.
	lim, err := limit.NewTokenBucket(rdb, limit.TokenBucket{Rate: limit.PerSecond(1), Burst: 3}, nil)
	if err != nil {
		panic(err)
	}
	key := unique("example:upload:")
	defer lim.Reset(ctx, key)

	for range 4 {
		res, err := lim.Allow(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d\n", res.Allowed, res.Remaining)
	}
	// Output:
	// allowed=true remaining=2
	// allowed=true remaining=1
	// allowed=true remaining=0
	// allowed=false remaining=0
}

func ExampleNewLeakyBucket() {
	rdb := exampleClient()
	defer rdb.Close()
	ctx := context.Background()

	// A bucket holding 2 calls that leaks 1 per second.
	lim, err := limit.NewLeakyBucket(rdb, limit.LeakyBucket{Capacity: 2, Leak: limit.PerSecond(1)}, nil)
	if err != nil {
		panic(err)
	}
	key := unique("example:webhook:")
	defer lim.Reset(ctx, key)

	for range 3 {
		res, err := lim.Allow(ctx, key)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v retry within 1s=%v\n", res.Allowed, res.RetryAfter > 0 && res.RetryAfter <= time.Second)
	}
	// Output:
	// allowed=true retry within 1s=false
	// allowed=true retry within 1s=false
	// allowed=false retry within 1s=true
}
