package cdc_test

import (
	"context"
	"log"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/redis/go-redis/v9"
)

// Every process of the service runs the Invalidator; one applies, the
// others stand by. (Not run: it needs a server with wal_level=logical.)
func ExampleInvalidator() {
	ctx := context.Background()
	dsn := "postgres://app@db/shop?sslmode=disable"
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{})
	if err != nil {
		log.Fatal(err)
	}
	cache, err := cacheaside.New(redis.NewClient(&redis.Options{Addr: "cache:6379"}), nil)
	if err != nil {
		log.Fatal(err)
	}
	users, err := repo.New[sample.User, int64](db, cache, &repo.Options{})
	if err != nil {
		log.Fatal(err)
	}
	inv, err := cdc.New(dsn, &cdc.Options{Slot: "shop_cache"})
	if err != nil {
		log.Fatal(err)
	}
	if err := inv.Register(users); err != nil {
		log.Fatal(err)
	}
	go func() {
		for range time.Tick(10 * time.Second) {
			if s := inv.Stats(); s.Active && s.Lag > time.Second {
				log.Printf("cache invalidation lags %v (%d bytes of WAL)", s.Lag, s.LagBytes)
			}
		}
	}()
	if err := inv.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
