package seqgen_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

// exampleBackends connects to the Redis and PostgreSQL of the environment
// and returns a unique name for the example's keys and rows, and a cleanup.
func exampleBackends() (redis.UniversalClient, *gorm.DB, string, func()) {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	dsn, err := testcontainers.PostgresDSN()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		panic(err)
	}
	if err := db.AutoMigrate(&schema.SeqSegment{}); err != nil {
		panic(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "ex" + hex.EncodeToString(b[:])
	return rdb, db, name, func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, name+":*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		db.Where("biz LIKE ?", name+"%").Delete(&schema.SeqSegment{})
		_ = rdb.Close()
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	}
}

func Example() {
	rdb, db, name, cleanup := exampleBackends()
	defer cleanup()

	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	gen, err := seqgen.New(rdb, db, &seqgen.Options{
		Namespace: name,     // unique to this run; the default is "ak"
		Location:  shanghai, // days begin at midnight in Shanghai
		Clock:     func() time.Time { return time.Date(2026, 11, 29, 9, 30, 0, 0, shanghai) },
		// The biz code names the counter; the prefix is what is printed.
		Prefix: func(biz string) string { return "ORD" },
	})
	if err != nil {
		panic(err)
	}
	defer gen.Close()

	ctx := context.Background()
	biz := name + "-orders"
	first, _ := gen.Next(ctx, biz)
	second, _ := gen.Next(ctx, biz)
	batch, _ := gen.NextN(ctx, biz, 3) // one round trip
	fmt.Println(first)
	fmt.Println(second)
	fmt.Println(batch)
	// Output:
	// ORD2026112900001
	// ORD2026112900002
	// [ORD2026112900003 ORD2026112900004 ORD2026112900005]
}

func Example_overflow() {
	rdb, db, name, cleanup := exampleBackends()
	defer cleanup()

	ctx := context.Background()
	clock := func() time.Time { return time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC) }
	prefix := func(string) string { return "T" }
	strict, _ := seqgen.New(rdb, db, &seqgen.Options{Namespace: name, Width: 1, Location: time.UTC, Clock: clock, Prefix: prefix})
	defer strict.Close()
	nine, _ := strict.NextN(ctx, name+"-a", 9)
	_, err := strict.Next(ctx, name+"-a")
	fmt.Println(nine[8], errors.Is(err, seqgen.ErrExhausted))

	wide, _ := seqgen.New(rdb, db, &seqgen.Options{Namespace: name, Width: 1, Location: time.UTC, Clock: clock, Prefix: prefix,
		Overflow: seqgen.OverflowWiden})
	defer wide.Close()
	nine, _ = wide.NextN(ctx, name+"-b", 9)
	tenth, _ := wide.Next(ctx, name+"-b")
	fmt.Println(nine[8], tenth)
	// Output:
	// T202611299 true
	// T202611299 T2026112910
}
