package configstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/repo/configstore"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
)

// exampleBackends connects to the Redis and PostgreSQL the tests use
// ($ASIDEKIT_REDIS_ADDR and $ASIDEKIT_POSTGRES_DSN, else servers that
// testcontainers started), creates a database of its own on that server with
// the asidekit tables, and returns options with a namespace of their own and
// a cleanup function, which removes the keys and drops the database.
func exampleBackends() (redis.UniversalClient, *gorm.DB, *configstore.Options, func()) {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	pg, dropDB, err := testcontainers.ExampleDatabase()
	if err != nil {
		panic(err)
	}
	db := pg.DB
	var b [6]byte
	_, _ = rand.Read(b[:])
	if err := schema.Migrate(db); err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	opts := &configstore.Options{Namespace: "example-" + hex.EncodeToString(b[:])}
	return rdb, db, opts, func() {
		s, _ := configstore.New(rdb, db, opts)
		rdb.Del(context.Background(), s.Key(), s.Key()+":lock")
		_ = rdb.Close()
		dropDB()
	}
}

func Example() {
	rdb, db, opts, cleanup := exampleBackends()
	defer cleanup()
	ctx := context.Background()

	store, err := configstore.New(rdb, db, opts)
	if err != nil {
		panic(err)
	}
	if err := store.SetMany(ctx, map[string]string{"checkout.enabled": "true", "banner": "Welcome"}); err != nil {
		panic(err)
	}
	if err := store.Delete(ctx, "banner"); err != nil {
		panic(err)
	}
	v, err := store.Get(ctx, "checkout.enabled")
	fmt.Println(v, err)
	_, err = store.Get(ctx, "banner")
	fmt.Println(err)
	// Output:
	// true <nil>
	// configstore: key not found
}

func ExampleStore_Watch() {
	rdb, db, opts, cleanup := exampleBackends()
	defer cleanup()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	store, err := configstore.New(rdb, db, opts)
	if err != nil {
		panic(err)
	}
	// Keep a local copy: Watch starts with the whole hash, then streams
	// every change; Local.Apply keeps the newest version of each key.
	var local configstore.Local
	changes, err := store.Watch(ctx)
	if err != nil {
		panic(err)
	}
	go func() {
		for c := range changes {
			local.Apply(c)
		}
	}()

	if err := store.Set(ctx, "max_upload_mb", "25"); err != nil {
		panic(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if v, ok := local.Get("max_upload_mb"); ok {
			fmt.Println("local copy:", v)
			break
		}
	}
	// Output:
	// local copy: 25
}

func ExampleStore_Reconcile() {
	rdb, db, opts, cleanup := exampleBackends()
	defer cleanup()
	ctx := context.Background()

	store, err := configstore.New(rdb, db, opts)
	if err != nil {
		panic(err)
	}
	if err := store.SetMany(ctx, map[string]string{"a": "1", "b": "2"}); err != nil {
		panic(err)
	}
	// Someone edits the mirror by hand.
	rdb.HSet(ctx, store.Key(), "a", "1:edited in redis", "c", "1:never in the table")

	report, err := store.Reconcile(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("fixed %d: stale %v, extra %v\n", report.Fixes(), report.Stale, report.Extra)
	all, _ := store.All(ctx)
	fmt.Println(all)
	// Output:
	// fixed 2: stale [a], extra [c]
	// map[a:1 b:2]
}

// When Redis is down, a write still commits to the table (the error says
// the hash lags) and reads fall back to the table.
func ExampleStore_Get_redisDown() {
	_, db, opts, cleanup := exampleBackends()
	defer cleanup()
	ctx := context.Background()

	// A client of a Redis that is down: nothing listens on port 1.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	store, err := configstore.New(down, db, opts)
	if err != nil {
		panic(err)
	}
	err = store.Set(ctx, "banner", "Welcome")
	fmt.Println("committed, not mirrored:", errors.Is(err, configstore.ErrNotMirrored))
	v, err := store.Get(ctx, "banner")
	fmt.Println(v, err, "- reads answered by the table:", store.Stats().DBFallbacks)
	// Output:
	// committed, not mirrored: true
	// Welcome <nil> - reads answered by the table: 1
}
