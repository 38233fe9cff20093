// Command quickstart is asidekit's smallest end-to-end run: it creates a
// users table, creates a User through a repo.Repository, and reads it
// back twice through the cacheaside engine, printing how many SQL
// statements and Redis commands each step cost: the first read loads the
// row from the database, the second is served from Redis.
//
// It runs on the embedded backend (in-process miniredis and SQLite through
// a pure-Go driver), so it needs no server:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/glebarez/sqlite"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
)

// User is the application's own model; repo takes its table and primary
// key from GORM's schema of it.
type User struct {
	ID        int64     `gorm:"primaryKey" json:"id"`
	Email     string    `gorm:"size:320;not null;uniqueIndex" json:"email"`
	Name      string    `gorm:"size:200;not null" json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

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
	var redisCmds atomic.Int64
	rdb.AddHook(counter{&redisCmds})

	db, err := gorm.Open(sqlite.Open("file::memory:?cache=shared"), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		return err
	}
	if err := db.AutoMigrate(&User{}); err != nil {
		return err
	}
	var sqlStmts atomic.Int64
	if err := countSQL(db, &sqlStmts); err != nil {
		return err
	}
	fmt.Println("backend: embedded (miniredis + SQLite)")

	cache, err := cacheaside.New(rdb, nil)
	if err != nil {
		return err
	}
	defer cache.Close()
	users, err := repo.New[User, int64](db, cache, &repo.Options{
		Policy: cacheaside.Policy{TTL: 10 * time.Minute, NullTTL: time.Minute, Strategy: cacheaside.SingleFlight},
	})
	if err != nil {
		return err
	}

	// step runs f and prints what it cost.
	step := func(what string, f func() (string, error)) error {
		sql0, cmds0 := sqlStmts.Load(), redisCmds.Load()
		msg, err := f()
		if err != nil {
			return err
		}
		fmt.Printf("%-7s %-48s SQL %d, Redis %d\n", what+":", msg, sqlStmts.Load()-sql0, redisCmds.Load()-cmds0)
		return nil
	}

	u := User{Email: "ada@example.com", Name: "Ada Lovelace"}
	if err := step("create", func() (string, error) {
		err := users.Create(ctx, &u)
		return fmt.Sprintf("user id=%d email=%s", u.ID, u.Email), err
	}); err != nil {
		return err
	}
	for i := 1; i <= 2; i++ {
		hits := users.Stats().Hits
		if err := step(fmt.Sprintf("read %d", i), func() (string, error) {
			got, err := users.Get(ctx, u.ID)
			source := "database (miss, now cached)"
			if users.Stats().Hits > hits {
				source = "redis (hit)"
			}
			return fmt.Sprintf("%q from %s", got.Name, source), err
		}); err != nil {
			return err
		}
	}
	return nil
}

// countSQL counts every statement GORM runs on db.
func countSQL(db *gorm.DB, n *atomic.Int64) error {
	inc := func(*gorm.DB) { n.Add(1) }
	cb := db.Callback()
	for _, err := range []error{
		cb.Create().After("gorm:create").Register("quickstart:count", inc),
		cb.Query().After("gorm:query").Register("quickstart:count", inc),
		cb.Update().After("gorm:update").Register("quickstart:count", inc),
		cb.Delete().After("gorm:delete").Register("quickstart:count", inc),
		cb.Row().After("gorm:row").Register("quickstart:count", inc),
		cb.Raw().After("gorm:raw").Register("quickstart:count", inc),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// counter is a go-redis hook counting the commands sent, leaving out those
// that set up a new connection.
type counter struct{ n *atomic.Int64 }

func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

func (c counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if !handshake(cmd) {
				c.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}
