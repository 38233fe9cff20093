package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// On a Redis Cluster every id's keys share one hash tag: reads, batches
// across slots, invalidations and the filters all work.
func TestRepository_cluster(t *testing.T) {
	t.Parallel()
	pg := testcontainers.Postgres(t)
	if err := sample.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	rc := testcontainers.RedisCluster(t)
	e := newEnvOn(t, pg.DB, rc.Client, rc.Namespace)
	users := e.users(t, repo.Options{Filter: e.filterOptions(1000)})
	ctx := context.Background()
	rows := make([]sample.User, 50)
	for i := range rows {
		rows[i] = sample.User{Email: fmt.Sprintf("k%d@example.com", i), Name: "K"}
	}
	if err := pg.DB.Create(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if err := users.RebuildFilter(ctx); err != nil {
		t.Fatal(err)
	}
	ids := []int64{999_999} // absent, and ruled out by the filter
	for _, u := range rows {
		ids = append(ids, u.ID)
	}
	for round := range 2 {
		e.reset()
		got, err := users.GetMany(ctx, ids)
		if err != nil || len(got) != len(rows) {
			t.Fatalf("round %d: GetMany = %d rows, %v", round, len(got), err)
		}
		if want := 1 - round; e.sql.Count("SELECT") != want {
			t.Fatalf("round %d: %d SELECTs, want %d", round, e.sql.Count("SELECT"), want)
		}
	}
	u := rows[7]
	u.Name = "Renamed"
	if err := users.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if got, err := users.GetBy(ctx, "email", u.Email); err != nil || got.Name != "Renamed" {
		t.Fatalf("GetBy after update = %+v, %v", got, err)
	}
	if err := users.RebuildFilter(ctx); err != nil {
		t.Fatal(err)
	}
}
