package repo_test

import (
	"context"
	"slices"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
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
	u.Name, u.Email = "Grace", "trips3@example.com"
	e.reset()
	if err := users.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	e.cmds.mu.Lock()
	trips := e.cmds.tripCmds
	e.cmds.mu.Unlock()
	t.Logf("round trips of the update: %v", trips)
	scripted := 0
	for _, names := range trips {
		if slices.Contains(names, "evalsha") {
			scripted++
		}
	}
	if scripted != 1 || len(trips) != 2 {
		t.Errorf("the update's round trips: %v; want the reads before the statement in one, the upkeep's scripts in one", trips)
	}
	rows, _, err := q.List(ctx, repo.Page{Size: 10}, "Grace")
	if err != nil || len(rows) != 1 || rows[0].Email != "trips3@example.com" {
		t.Errorf("list Grace after the update = %+v, %v", rows, err)
	}
	if got, err := users.GetBy(ctx, "email", "trips3@example.com"); err != nil || got.ID != u.ID {
		t.Errorf("GetBy of the new email = %+v, %v", got, err)
	}
}
