package msgpackcodec_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/cacheaside/msgpackcodec"
	"github.com/asidekit/asidekit/testcontainers"
)

// exampleClient connects to the Redis the tests use ($ASIDEKIT_REDIS_ADDR,
// else one testcontainers started).
func exampleClient() *redis.Client {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	return redis.NewClient(&redis.Options{Addr: addr})
}

// A Cache whose entities store MessagePack instead of JSON.
func Example() {
	client := exampleClient()
	defer client.Close()
	cache, err := cacheaside.New(client, &cacheaside.Options{Codec: msgpackcodec.Codec{}})
	if err != nil {
		panic(err)
	}
	defer cache.Close()

	type user struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	b, _ := msgpackcodec.Codec{}.Marshal(user{ID: 1, Name: "Ada"})
	var u user
	_ = msgpackcodec.Codec{}.Unmarshal(b, &u)
	fmt.Println(u.ID, u.Name)
	// Output: 1 Ada
}
