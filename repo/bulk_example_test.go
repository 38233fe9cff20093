package repo_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/asidekit/asidekit/guard/bloom"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
)

// Seeding a table with CreateMany and reading by a unique column through
// its Bloom filter: the filter knows every email written, so an unknown
// one is answered without SQL.
func ExampleRepository_CreateMany() {
	db, rdb, cache, ns, cleanup := exampleSetup()
	defer cleanup()
	ctx := context.Background()

	users, err := repo.New[sample.User, int64](db, cache, &repo.Options{
		Filter:       &bloom.Options{Namespace: ns, Capacity: 10_000, FalsePositiveRate: 0.01},
		FilterClient: rdb,
	})
	if err != nil {
		panic(err)
	}
	seed := make([]sample.User, 2500)
	for i := range seed {
		seed[i] = sample.User{Email: fmt.Sprintf("user%d@example.com", i), Name: "User"}
	}
	// Three INSERTs of at most BatchSize (1,000) rows, in one transaction;
	// the ids come back in seed.
	if err := users.CreateMany(ctx, seed); err != nil {
		panic(err)
	}
	u, err := users.GetBy(ctx, "email", "user1234@example.com")
	fmt.Println(u.ID == seed[1234].ID, err)
	_, err = users.GetBy(ctx, "email", "nobody@example.com")
	fmt.Println(errors.Is(err, repo.ErrNotFound))
	// Output:
	// true <nil>
	// true
}
