package repo_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/asidekit/asidekit/repo"
)

// An UPDATE made by hand, with no CDC running, leaves a stale row in the
// cache: Inspect finds it, logs it and, with Repair, invalidates it.
func ExampleRepository_Inspect() {
	db, _, cache, _, cleanup := exampleSetup()
	defer cleanup()
	ctx := context.Background()
	users, err := repo.New[User, int64](db, cache, nil)
	if err != nil {
		panic(err)
	}
	defer users.Close()
	ada := User{ID: 1, Email: "ada@example.com", Name: "Ada"}
	_ = users.Create(ctx, &ada)
	_, _ = users.Get(ctx, 1) // cached
	db.Exec("UPDATE users SET name = 'Ada L.' WHERE id = 1")

	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rep, err := users.Inspect(ctx, repo.InspectOptions{Grace: 100 * time.Millisecond, Repair: true, Logger: quiet})
	if err != nil {
		panic(err)
	}
	fmt.Println("inspected", rep.Inspected, "stale", rep.Stale, "repaired", rep.Repaired)
	for _, v := range rep.Found {
		fmt.Println(v.Kind, v.Entity, v.ID)
	}
	u, _ := users.Get(ctx, 1)
	fmt.Println(u.Name)
	// Output:
	// inspected 1 stale 1 repaired 1
	// stale users 1
	// Ada L.
}
