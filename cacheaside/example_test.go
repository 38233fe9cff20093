package cacheaside_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/testcontainers"
	"github.com/redis/go-redis/v9"
)

type User struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// exampleCache connects to $ASIDEKIT_REDIS_ADDR (else the Redis the tests use)
// in a namespace of its own, and returns a function that removes the keys.
func exampleCache() (*cacheaside.Cache, func()) {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	client := redis.NewClient(&redis.Options{Addr: addr})
	ns := "example" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c, err := cacheaside.New(client, &cacheaside.Options{Namespace: ns})
	if err != nil {
		panic(err)
	}
	return c, func() {
		_ = c.Close()
		ctx := context.Background()
		keys, _ := client.Keys(ctx, ns+":*").Result()
		if len(keys) > 0 {
			client.Del(ctx, keys...)
		}
		_ = client.Close()
	}
}

// db stands in for a table.
var db = map[int64]User{1: {ID: 1, Name: "Ada"}, 2: {ID: 2, Name: "Grace"}}

func loadUser(ctx context.Context, id string) (User, error) {
	n, _ := strconv.ParseInt(id, 10, 64)
	u, ok := db[n]
	if !ok {
		return User{}, cacheaside.ErrNotFound
	}
	fmt.Println("  (db query for", id+")")
	return u, nil
}

func ExampleEntity_Get() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, err := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{
		TTL:      10 * time.Minute,
		NullTTL:  time.Minute, // cache "not found" too
		Strategy: cacheaside.Mutex,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		u, err := users.Get(ctx, "1", loadUser)
		fmt.Println(u.Name, err)
	}
	_, err = users.Get(ctx, "404", loadUser)
	fmt.Println(errors.Is(err, cacheaside.ErrNotFound))
	s := users.Stats()
	fmt.Println("hits", s.Hits, "loads", s.Loads)
	// Output:
	//   (db query for 1)
	// Ada <nil>
	// Ada <nil>
	// true
	// hits 1 loads 2
}

func ExampleEntity_GetMany() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, _ := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{NullTTL: time.Minute})
	load := func(ctx context.Context, ids []string) (map[string]User, error) {
		fmt.Println("  (db query for", len(ids), "ids)")
		out := map[string]User{}
		for _, id := range ids {
			n, _ := strconv.ParseInt(id, 10, 64)
			if u, ok := db[n]; ok {
				out[id] = u
			}
		}
		return out, nil
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		got, _ := users.GetMany(ctx, []string{"1", "2", "3"}, load)
		fmt.Println(len(got), got["1"].Name, got["2"].Name)
	}
	// Output:
	//   (db query for 3 ids)
	// 2 Ada Grace
	// 2 Ada Grace
}

func ExampleEntity_Invalidate() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, _ := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{})
	ctx := context.Background()
	u, _ := users.Get(ctx, "2", loadUser)
	fmt.Println(u.Name)

	// Writers change the database first, then invalidate.
	old := db[2]
	defer func() { db[2] = old }()
	db[2] = User{ID: 2, Name: "Grace Hopper"}
	if err := users.Invalidate(ctx, "2"); err != nil {
		fmt.Println(err)
	}
	u, _ = users.Get(ctx, "2", loadUser)
	fmt.Println(u.Name)
	// Output:
	//   (db query for 2)
	// Grace
	//   (db query for 2)
	// Grace Hopper
}

// Cached looks without loading: a writer that wants the row's old values,
// say, takes them from the cache when it has them.
func ExampleEntity_Cached() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, _ := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{})
	ctx := context.Background()
	_, ok := users.Cached(ctx, "2")
	fmt.Println(ok)
	_, _ = users.Get(ctx, "2", loadUser)
	u, ok := users.Cached(ctx, "2")
	fmt.Println(u.Name, ok)
	// Output:
	// false
	//   (db query for 2)
	// Grace true
}

// A hot key read by many goroutines: concurrent Gets of a key share GETs
// (each still sent after its readers began), so the key costs about one
// GET per round trip instead of one per Get. No option is needed.
func ExamplePolicy_coalesceReads() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, _ := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{Strategy: cacheaside.Mutex})
	ctx := context.Background()
	_ = users.Set(ctx, "1", db[1])
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if u, err := users.Get(ctx, "1", loadUser); err != nil || u.Name != "Ada" {
					fmt.Println(u, err)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println("hits", users.Stats().Hits)
	// Output:
	// hits 160
}

// A near cache keeps hot values in the process: a hit costs no round trip.
// Redis itself reports every change of a cached key (client tracking), so
// a write from any process, or from outside asidekit, drops the local copy
// everywhere; the writing process drops its own before the write returns.
func ExamplePolicy_local() {
	c, cleanup := exampleCache()
	defer cleanup()
	users, err := cacheaside.NewEntity[User](c, "user", cacheaside.Policy{
		Local: &cacheaside.LocalPolicy{MaxEntries: 10000, TTL: time.Minute},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	if err := c.WaitLocal(ctx); err != nil { // the invalidation subscription is confirmed
		panic(err)
	}
	// A load, then Redis hits until one fills the near cache (a fill is
	// refused when a change of the key, such as the load's own store, is
	// reported while it reads), then local hits.
	for users.Stats().LocalHits == 0 {
		if _, err := users.Get(ctx, "1", loadUser); err != nil {
			panic(err)
		}
	}
	_ = users.Set(ctx, "1", User{ID: 1, Name: "Ada L."}) // the source of truth changed
	u, _ := users.Get(ctx, "1", loadUser)                // never the old local copy
	fmt.Println(u.Name)
	// Output:
	// (db query for 1)
	// Ada L.
}
