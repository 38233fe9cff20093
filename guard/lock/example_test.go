package lock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/guard/lock"
	"github.com/asidekit/asidekit/testcontainers"
)

// exampleClient connects to $ASIDEKIT_REDIS_ADDR (else the Redis the tests use)
// and returns a namespace of its own, with a function that deletes its keys.
func exampleClient() (*redis.Client, string, func()) {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	ns := fmt.Sprintf("example%d", time.Now().UnixNano())
	return client, ns, func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, ns+":*", 100).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		_ = client.Close()
	}
}

func ExampleLocker_Obtain() {
	client, ns, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()

	// One Locker per process, shared by all its goroutines.
	locker, err := lock.New(client, &lock.Options{Namespace: ns})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	lk, err := locker.Obtain(ctx, "invoice:7", 10*time.Second, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("fence:", lk.Fence())

	_, err = locker.TryObtain(ctx, "invoice:7", 10*time.Second)
	fmt.Println("held by another:", errors.Is(err, lock.ErrNotObtained))

	if err := lk.Release(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("release again:", errors.Is(lk.Release(ctx), lock.ErrLockNotHeld))

	next, err := locker.Obtain(ctx, "invoice:7", 10*time.Second, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer next.Release(ctx)
	fmt.Println("next fence:", next.Fence())
	// Output:
	// fence: 1
	// held by another: true
	// release again: true
	// next fence: 2
}

func ExampleLock_AutoRefresh() {
	client, ns, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	locker, err := lock.New(client, &lock.Options{Namespace: ns})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	// A short ttl bounds how long a crashed holder blocks others; the
	// watchdog keeps the lock while this process lives.
	lk, err := locker.Obtain(ctx, "nightly-report", 300*time.Millisecond, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	work, stop := lk.AutoRefresh(ctx)
	defer stop()

	select {
	case <-time.After(time.Second): // work longer than the ttl
		fmt.Println("still held:", work.Err() == nil)
	case <-work.Done():
		fmt.Println("lock lost:", context.Cause(work))
		return
	}
	if err := lk.Release(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("after release:", work.Err())
	// Output:
	// still held: true
	// after release: context canceled
}

func ExampleLock_Fence() {
	client, ns, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	locker, err := lock.New(client, &lock.Options{Namespace: ns})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	// The store remembers the highest fence it accepted, and refuses
	// writes from holders whose lock has since passed to someone else.
	var highest int64
	write := func(fence int64) error {
		if fence < highest {
			return fmt.Errorf("stale holder (fence %d < %d)", fence, highest)
		}
		highest = fence
		return nil
	}

	slow, err := locker.Obtain(ctx, "account:9", 50*time.Millisecond, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	time.Sleep(100 * time.Millisecond) // paused past its ttl
	fast, err := locker.Obtain(ctx, "account:9", time.Second, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("new holder writes:", write(fast.Fence()))
	fmt.Println("old holder writes:", write(slow.Fence()))
	_ = fast.Release(ctx)
	// Output:
	// new holder writes: <nil>
	// old holder writes: stale holder (fence 1 < 2)
}

func ExampleNewRedlock() {
	ctx := context.Background()
	// Three independent Redis servers (not replicas, not one Cluster).
	var nodes []redis.UniversalClient
	for _, addr := range []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"} {
		nodes = append(nodes, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1}))
	}
	rl, err := lock.NewRedlock(nodes, nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	lk, err := rl.Obtain(ctx, "payout:2026-11-30", 10*time.Second, nil)
	if errors.Is(err, lock.ErrNoQuorum) {
		fmt.Println("too many nodes down:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer lk.Release(ctx)
	fmt.Println("held on a quorum, fence", lk.Fence())
}
