package bloom_test

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

// exampleClient connects to $ASIDEKIT_REDIS_ADDR (else the Redis the tests use).
func exampleClient() *redis.Client {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	return redis.NewClient(&redis.Options{Addr: addr})
}

// exampleNamespace keeps each run's keys apart from everyone else's.
func exampleNamespace() string {
	return "akex" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func Example() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	users, err := bloom.New(client, "user", &bloom.Options{
		Namespace:         exampleNamespace(),
		Capacity:          1_000_000,
		FalsePositiveRate: 0.01,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer users.Delete(ctx)

	// A new filter answers "maybe" for every id until a Rebuild has filled
	// it from the full set of ids, e.g. streamed from the table in pages.
	// (Options.Source makes a check start that rebuild by itself.)
	table := []string{"1", "2", "42"}
	err = users.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		return add(table)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// Rows created later are added one by one.
	if err := users.Add(ctx, "43"); err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range []string{"42", "43", "404"} {
		ok, err := users.MightContain(ctx, id)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("user %s might exist: %v\n", id, ok)
	}
	// Output:
	// user 42 might exist: true
	// user 43 might exist: true
	// user 404 might exist: false
}

func ExampleFilter_Rebuild() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	orders, err := bloom.New(client, "order", &bloom.Options{
		Namespace: exampleNamespace(), Capacity: 10_000, FalsePositiveRate: 0.001,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer orders.Delete(ctx)
	_ = orders.Add(ctx, "ORD-deleted-long-ago")

	// The source streams the ids that exist now, e.g. from the database in
	// batches; readers keep getting answers meanwhile.
	table := []string{"ORD-1", "ORD-2", "ORD-3", "ORD-4", "ORD-5"}
	err = orders.Rebuild(ctx, func(ctx context.Context, add func([]string) error) error {
		for i := 0; i < len(table); i += 2 {
			if err := add(table[i:min(i+2, len(table))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	got, _ := orders.MightContainMany(ctx, []string{"ORD-3", "ORD-deleted-long-ago"})
	st, _ := orders.Stats(ctx)
	fmt.Println(got, "generation", st.Generation)
	// Output: [true false] generation 1
}

func ExampleFilter_Stats() {
	ctx := context.Background()
	client := exampleClient()
	defer client.Close()

	f, err := bloom.New(client, "sizing", &bloom.Options{
		Namespace: exampleNamespace(), Capacity: 1_000_000, FalsePositiveRate: 0.01,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := f.Stats(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("m=%d bits (%.1f MiB), k=%d, shards=%d\n", st.Bits, float64(st.Bits)/8/(1<<20), st.HashFunctions, st.Shards)
	// Output: m=9585064 bits (1.1 MiB), k=7, shards=1
}
