// Command quickstart is asidekit's smallest end-to-end run: it migrates the
// sample schema, writes a User to the database, caches it in Redis and reads
// it back through the cache, printing each step.
//
// With no flags it runs on the embedded backend (in-process miniredis and
// SQLite through a pure-Go driver), so it needs no server:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/schema"
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	mr, err := miniredis.Run()
	if err != nil {
		return err
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	db, err := gorm.Open(sqlite.Open("file::memory:?cache=shared"), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		return err
	}
	if err := schema.Migrate(db); err != nil {
		return err
	}
	fmt.Println("backend: embedded (miniredis + SQLite)")

	u := schema.User{Email: "ada@example.com", Name: "Ada Lovelace"}
	if err := db.WithContext(ctx).Create(&u).Error; err != nil {
		return err
	}
	fmt.Printf("db:    INSERT user id=%d email=%s\n", u.ID, u.Email)

	key := fmt.Sprintf("ak:{users:%d}", u.ID)
	for i := 1; i <= 2; i++ {
		got, source, err := readThrough(ctx, rdb, db, key, u.ID)
		if err != nil {
			return err
		}
		fmt.Printf("read %d: user id=%d name=%q from %s\n", i, got.ID, got.Name, source)
	}
	return nil
}

// readThrough returns the user from Redis, or loads it from the database and
// caches it for a minute.
func readThrough(ctx context.Context, rdb *redis.Client, db *gorm.DB, key string, id int64) (schema.User, string, error) {
	var u schema.User
	b, err := rdb.Get(ctx, key).Bytes()
	if err == nil {
		return u, "redis (hit)", json.Unmarshal(b, &u)
	}
	if !errors.Is(err, redis.Nil) {
		return u, "", err
	}
	if err := db.WithContext(ctx).First(&u, id).Error; err != nil {
		return u, "", err
	}
	b, err = json.Marshal(u)
	if err != nil {
		return u, "", err
	}
	return u, "db (miss, now cached)", rdb.Set(ctx, key, b, time.Minute).Err()
}
