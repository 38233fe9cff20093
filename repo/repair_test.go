package repo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/faultproxy"
	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/internal/testswitch"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// Two processes, A and B, share a database and a Redis. B caches that a
// user is absent (by id and by email); A creates the user with its Redis
// link cut, so that its upkeep (the filter adds, the drop of B's cached
// "not found") waits in its retrier and its Create returns ErrAfterCommit;
// then B writes the same row, its id and email unchanged, and the write
// returns nil. A write that completed must leave B's reads finding the
// row, whatever A still owes.

// userWrite writes u through users.
type userWrite func(ctx context.Context, users *repo.Repository[sample.User, int64], u *sample.User) error

// checkRepair runs those steps, B's write being write, and returns what B
// then reads wrong; filtered gives both processes Bloom filters.
func checkRepair(t *testing.T, filtered bool, write userWrite) (problems []string) {
	t.Helper()
	pg := testcontainers.Postgres(t)
	if err := sample.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	rn := testcontainers.Redis(t)
	px, err := faultproxy.New(rn.Addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.Close() })
	rdbA := redis.NewClient(&redis.Options{Addr: px.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, ReadTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdbA.Close() })
	a := newEnvOn(t, pg.DB, rdbA, rn.Namespace)
	b := newEnvOn(t, pg.DB, rn.Client, rn.Namespace)
	o := repo.Options{Policy: cacheaside.Policy{TTL: time.Hour, NullTTL: time.Hour}, AfterCommitErrors: true}
	oa, ob := o, o
	if filtered {
		oa.Filter, ob.Filter = a.filterOptions(1000), b.filterOptions(1000)
	}
	usersA, usersB := a.users(t, oa), b.users(t, ob)
	ctx := context.Background()
	const email = "ada@example.com"

	if _, err := usersB.Get(ctx, 1); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("B's Get(1) before the row = %v, want ErrNotFound", err)
	}
	if _, err := usersB.GetBy(ctx, "email", email); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("B's GetBy before the row = %v, want ErrNotFound", err)
	}
	px.Cut()
	defer px.Heal() // then A's retrier lands its upkeep
	err = usersA.Create(ctx, &sample.User{ID: 1, Email: email, Name: "Ada"})
	if !errors.Is(err, repo.ErrAfterCommit) {
		t.Fatalf("A's Create with its Redis link cut = %v, want ErrAfterCommit", err)
	}
	if err := write(ctx, usersB, &sample.User{ID: 1, Email: email, Name: "Ada 2"}); err != nil {
		t.Fatalf("B's write = %v", err)
	}
	if got, err := usersB.Get(ctx, 1); err != nil || got.Name != "Ada 2" {
		problems = append(problems, fmt.Sprintf("B's Get(1) after its write = %+v, %v", got, err))
	}
	if got, err := usersB.GetBy(ctx, "email", email); err != nil || got.ID != 1 || got.Name != "Ada 2" {
		problems = append(problems, fmt.Sprintf("B's GetBy(email) after its write = %+v, %v", got, err))
	}
	return problems
}

// repairChecks are the checks, by name: B's Put and Update, with and
// without filters.
var repairChecks = map[string]func(t *testing.T) []string{}

func init() {
	writes := map[string]userWrite{
		"put": func(ctx context.Context, users *repo.Repository[sample.User, int64], u *sample.User) error {
			return users.Put(ctx, u)
		},
		"update": func(ctx context.Context, users *repo.Repository[sample.User, int64], u *sample.User) error {
			return users.Update(ctx, u)
		},
	}
	for name, write := range writes {
		for _, filtered := range []bool{false, true} {
			repairChecks[fmt.Sprintf("%s/filters %v", name, filtered)] = func(t *testing.T) []string {
				return checkRepair(t, filtered, write)
			}
		}
	}
}

func TestWrite_repairsPendingUpkeep(t *testing.T) {
	t.Parallel()
	for name, check := range repairChecks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, p := range check(t) {
				t.Error(p)
			}
		})
	}
}

// Without the repair (testswitch.RepairOff) B reads the row as absent
// after its own write returned nil. (Not parallel: the switch is
// process-wide.)
func TestWrite_repairsPendingUpkeep_failsWithoutRule(t *testing.T) {
	testswitch.RepairOff.Store(true)
	defer testswitch.RepairOff.Store(false)
	for name, check := range repairChecks {
		t.Run(name, func(t *testing.T) {
			problems := check(t)
			if len(problems) == 0 {
				t.Fatal("nothing wrong without the rule: the check cannot fail")
			}
			for _, p := range problems {
				t.Log("without the rule: " + p)
			}
		})
	}
}
