package repo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo"
)

// A Redis that loses every key (restarted empty, FLUSHALL, evicted) costs
// no wrong "not found": the Bloom filters, no longer known complete,
// answer "maybe", every row reads by id and by unique value, and the
// filters rebuild themselves from the table with no operator step.
func TestFilter_lostState_noFalseNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 300
	ids := seedUsers(t, e, n)
	users := e.users(t, repo.Options{Filter: e.filterOptions(10 * n), BatchSize: 100})
	ctx := context.Background()
	readAll := func(when string) {
		t.Helper()
		for i, id := range ids {
			if _, err := users.Get(ctx, id); err != nil {
				t.Fatalf("%s: Get(%d): %v", when, id, err)
			}
			if _, err := users.GetBy(ctx, "email", fmt.Sprintf("seed%d@example.com", i+1)); err != nil {
				t.Fatalf("%s: GetBy(seed%d): %v", when, i+1, err)
			}
		}
	}
	readAll("before")

	// Every key of the test's namespace goes, as in a restart without
	// persistence.
	var keys []string
	iter := e.rdb.Scan(ctx, 0, e.ns+"*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 {
		t.Fatal("no keys in the namespace")
	}
	if err := e.rdb.Del(ctx, keys...).Err(); err != nil {
		t.Fatal(err)
	}
	readAll("after the keys were lost")

	// The filters rebuild themselves (the reads above started it).
	deadline := time.Now().Add(time.Minute)
	for _, f := range []interface {
		Ready(context.Context) (bool, error)
	}{users.Filter(), users.FilterBy("email")} {
		for {
			ready, err := f.Ready(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ready {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the filters did not rebuild themselves")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	readAll("after the rebuild")
	// Absent ids are ruled out again (a 1 % false-positive rate: a few
	// of 200 may pass).
	e.reset()
	for id := int64(10 * n); id < 10*n+200; id++ {
		_, err := users.Get(ctx, id)
		isNotFound(t, err)
	}
	if q := e.sql.Count("SELECT"); q > 20 {
		t.Errorf("200 absent ids after the rebuild ran %d SELECTs; the filter should rule most out", q)
	}
}
