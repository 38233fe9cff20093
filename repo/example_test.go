package repo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// exampleSetup connects to the Redis and PostgreSQL the tests use
// ($ASIDEKIT_REDIS_ADDR and $ASIDEKIT_POSTGRES_DSN, else servers that
// testcontainers started), creates a database of its own on that server with
// the users and listings tables, and a Cache under a fresh namespace.
// cleanup drops the database and removes the namespace's keys.
func exampleSetup() (db *gorm.DB, rdb *redis.Client, cache *cacheaside.Cache, ns string, cleanup func()) {
	addr, err := testcontainers.RedisAddr()
	if err != nil {
		panic(err)
	}
	pg, dropDB, err := testcontainers.ExampleDatabase()
	if err != nil {
		panic(err)
	}
	db = pg.DB
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	ns = "example-" + hex.EncodeToString(b)
	if err := db.AutoMigrate(&User{}, &Listing{}); err != nil {
		panic(err)
	}
	rdb = redis.NewClient(&redis.Options{Addr: addr})
	cache, err = cacheaside.New(rdb, &cacheaside.Options{Namespace: ns})
	if err != nil {
		panic(err)
	}
	return db, rdb, cache, ns, func() {
		_ = cache.Close()
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, ns+":*", 1000).Iterator()
		for iter.Next(ctx) {
			rdb.Unlink(ctx, iter.Val())
		}
		_ = rdb.Close()
		dropDB()
	}
}

// User is an application's account model: a primary key, a unique email.
type User struct {
	ID        int64     `gorm:"primaryKey" json:"id"`
	Email     string    `gorm:"size:320;not null;uniqueIndex" json:"email"`
	Name      string    `gorm:"size:200;not null" json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Listing is a rental listing, unique by address and room.
type Listing struct {
	ID        int64     `gorm:"primaryKey" json:"id"`
	Address   string    `gorm:"size:500;not null;uniqueIndex:idx_listing_address_room,priority:1" json:"address"`
	Room      string    `gorm:"size:50;not null;uniqueIndex:idx_listing_address_room,priority:2" json:"room"`
	Rent      int64     `gorm:"not null" json:"rent"`
	CreatedAt time.Time `json:"created_at"`
}

func Example() {
	db, _, cache, _, cleanup := exampleSetup()
	defer cleanup()
	ctx := context.Background()

	users, err := repo.New[User, int64](db, cache, &repo.Options{
		Policy: cacheaside.Policy{TTL: 10 * time.Minute, NullTTL: time.Minute},
	})
	if err != nil {
		panic(err)
	}
	u := User{Email: "ada@example.com", Name: "Ada Lovelace"}
	if err := users.Create(ctx, &u); err != nil {
		panic(err)
	}
	for range 2 {
		got, err := users.Get(ctx, u.ID)
		if err != nil {
			panic(err)
		}
		fmt.Println(got.Name)
	}
	st := users.Stats()
	fmt.Printf("loads %d, hits %d\n", st.Loads, st.Hits)

	_, err = users.Get(ctx, 12345)
	fmt.Println(errors.Is(err, repo.ErrNotFound), errors.Is(err, gorm.ErrRecordNotFound))
	// Output:
	// Ada Lovelace
	// Ada Lovelace
	// loads 1, hits 1
	// true true
}

func ExampleTransaction() {
	db, _, cache, _, cleanup := exampleSetup()
	defer cleanup()
	ctx := context.Background()
	users, err := repo.New[User, int64](db, cache, &repo.Options{})
	if err != nil {
		panic(err)
	}
	u := User{Email: "grace@example.com", Name: "Grace"}
	if err := users.Create(ctx, &u); err != nil {
		panic(err)
	}

	// The rename is invalidated in the cache only once the transaction
	// commits; had fn failed, nothing would have been.
	err = repo.Transaction(ctx, db, func(tx *repo.Tx) error {
		u.Name = "Grace Hopper"
		return users.WithTx(tx).Update(ctx, &u)
	})
	if err != nil {
		panic(err)
	}
	got, _ := users.Get(ctx, u.ID)
	fmt.Println(got.Name)
	// Output: Grace Hopper
}

func ExampleRepository_InsertIfAbsent() {
	db, _, cache, ns, cleanup := exampleSetup()
	defer cleanup()
	ctx := context.Background()
	listings, err := repo.New[Listing, int64](db, cache, &repo.Options{
		Filter:    &bloom.Options{Namespace: ns, Capacity: 100_000, FalsePositiveRate: 0.01},
		UniqueKey: []string{"address", "room"},
	})
	if err != nil {
		panic(err)
	}
	for _, l := range []Listing{
		{Address: "1 Main St", Room: "2B", Rent: 120000},
		{Address: "1 Main St", Room: "3A", Rent: 95000},
		{Address: "1 Main St", Room: "2B", Rent: 110000}, // the same flat again
	} {
		inserted, err := listings.InsertIfAbsent(ctx, &l)
		if err != nil {
			panic(err)
		}
		fmt.Println(l.Address, l.Room, inserted)
	}
	// Output:
	// 1 Main St 2B true
	// 1 Main St 3A true
	// 1 Main St 2B false
}

func ExampleRepository_GetBy() {
	db, _, cache, _, cleanup := exampleSetup()
	defer cleanup()
	ctx := context.Background()
	users, err := repo.New[User, int64](db, cache, &repo.Options{})
	if err != nil {
		panic(err)
	}
	u := User{Email: "alan@example.com", Name: "Alan Turing"}
	if err := users.Create(ctx, &u); err != nil {
		panic(err)
	}
	got, err := users.GetBy(ctx, "email", "alan@example.com")
	if err != nil {
		panic(err)
	}
	fmt.Println(got.Name)

	u.Email = "turing@example.com"
	if err := users.Update(ctx, &u); err != nil {
		panic(err)
	}
	_, err = users.GetBy(ctx, "email", "alan@example.com")
	fmt.Println(errors.Is(err, repo.ErrNotFound))
	// Output:
	// Alan Turing
	// true
}
