package repo_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// A fully configured Update (write-through, a unique key and the primary
// key in Bloom filters, a cached list that the write moves a row out of
// and into) sends its upkeep after the COMMIT in one round trip: the
// row's store, the mapping's invalidation, both filters' additions and
// both lists' patches share one pipeline (script.Batch, one per node).
// Before the statement it reads the row's version and the lists'
// generations, in one round trip (cacheaside's ReadBefore): two in all.
func TestUpdate_upkeepOneRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	update := fullUpdate(t, e)
	e.reset()
	update()
	e.cmds.mu.Lock()
	trips := e.cmds.tripCmds
	e.cmds.mu.Unlock()
	t.Logf("round trips of the update: %v", trips)
	if scripted(trips) != 1 || len(trips) != 2 {
		t.Errorf("the update's round trips: %v; want the reads before the statement in one, the upkeep's scripts in one", trips)
	}
}

// On a Redis Cluster the same Update's keys are spread over the masters
// (the row, its mapping, the filters' shards and the lists hash to
// different slots): each node it touches gets at most one round trip
// before the statement and one after the COMMIT.
func TestUpdate_upkeepOneRoundTripPerNode(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	if err := sample.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	rc := testcontainers.RedisCluster(t)
	client, ok := rc.NewClient(t).(*redis.ClusterClient)
	if !ok {
		t.Fatal("RedisCluster's client is not a *redis.ClusterClient")
	}
	var mu sync.Mutex
	nodes := map[string]*cmdCounter{} // by address
	client.OnNewNode(func(c *redis.Client) {
		ctr := &cmdCounter{}
		c.AddHook(ctr)
		mu.Lock()
		nodes[c.Options().Addr] = ctr
		mu.Unlock()
	})
	e := newEnvOn(t, pg.DB, client, rc.Namespace)
	update := fullUpdate(t, e)
	mu.Lock()
	for _, ctr := range nodes {
		ctr.reset()
	}
	mu.Unlock()
	update()
	mu.Lock()
	defer mu.Unlock()
	touched := 0
	for addr, ctr := range nodes {
		ctr.mu.Lock()
		trips := slices.DeleteFunc(slices.Clone(ctr.tripCmds), func(names []string) bool {
			return slices.Contains(names, "cluster") // the client's own slot reloads
		})
		ctr.mu.Unlock()
		if len(trips) == 0 {
			continue
		}
		touched++
		t.Logf("node %s: %v", addr, trips)
		if scripted(trips) > 1 || len(trips) > 2 {
			t.Errorf("node %s: round trips %v; want at most one before the statement and one after the COMMIT", addr, trips)
		}
	}
	if touched < 2 {
		t.Fatalf("the update touched %d nodes: its keys were not spread, the test does not test the split", touched)
	}
}

// scripted counts the round trips that ran scripts.
func scripted(trips [][]string) int {
	n := 0
	for _, names := range trips {
		if slices.Contains(names, "evalsha") || slices.Contains(names, "eval") {
			n++
		}
	}
	return n
}

// fullUpdate sets up a fully configured Update on e (write-through, the
// primary key and the unique email in Bloom filters, a patchable list by
// name with both lists cached, the scripts loaded by a first update) and
// returns the update to count, which moves the row from one cached list
// to the other and changes its email. Once it ran, fullUpdate's cleanup
// checks that the list and the mapping answer the new values.
func fullUpdate(t *testing.T, e *env) (update func()) {
	t.Helper()
	users := e.users(t, repo.Options{Filter: e.filterOptions(1000), WriteThrough: true})
	q, err := repo.NewQuery(users, repo.QueryOf{Name: "by_name", Where: []string{"name"}, Order: "id"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u := sample.User{Email: "trips@example.com", Name: "Ada"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Ada", "Grace"} { // both lists cached
		if _, _, err := q.List(ctx, repo.Page{Size: 10}, name); err != nil {
			t.Fatal(err)
		}
	}
	// A first update loads the scripts of the write path (a server may
	// not have them yet: NOSCRIPT costs one more round trip).
	u.Email = "trips2@example.com"
	if err := users.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	return func() {
		u.Name, u.Email = "Grace", "trips3@example.com"
		if err := users.Update(ctx, &u); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			rows, _, err := q.List(ctx, repo.Page{Size: 10}, "Grace")
			if err != nil || len(rows) != 1 || rows[0].Email != "trips3@example.com" {
				t.Errorf("list Grace after the update = %+v, %v", rows, err)
			}
			if got, err := users.GetBy(ctx, "email", "trips3@example.com"); err != nil || got.ID != u.ID {
				t.Errorf("GetBy of the new email = %+v, %v", got, err)
			}
		})
	}
}
