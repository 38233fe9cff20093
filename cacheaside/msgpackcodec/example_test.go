package msgpackcodec_test

import (
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/cacheaside/msgpackcodec"
)

// A Cache whose entities store MessagePack instead of JSON.
func Example() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
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
