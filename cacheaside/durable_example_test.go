package cacheaside_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
)

// With ReplicaAcks, an invalidation counts as done only once a replica
// has it. A standalone Redis without replicas confirms nothing: the
// invalidation stays pending (reads of the id go to the loader until it is
// applied) and the shortfall is counted. On a Cluster or Sentinel
// deployment with a replica per master, it completes at once.
func ExampleOptions_replicaAcks() {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	c, err := cacheaside.New(client, &cacheaside.Options{
		Namespace:         fmt.Sprintf("example-acks-%d", time.Now().UnixNano()),
		ReplicaAcks:       1,
		ReplicaAckTimeout: 50 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	users, err := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{TTL: time.Minute})
	if err != nil {
		panic(err)
	}

	err = users.Invalidate(context.Background(), "1")
	fmt.Println("pending:", errors.Is(err, cacheaside.ErrInvalidationPending))
	fmt.Println("shortfall counted:", users.Stats().ReplicaAckShortfalls >= 1)
	// Output:
	// pending: true
	// shortfall counted: true
}
