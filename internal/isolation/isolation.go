// Package isolation checks that tests sharing one PostgreSQL and one Redis
// server do not see each other's data. Tests in several packages call Check;
// go test runs those packages in parallel.
package isolation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asidekit/asidekit/testcontainers"
)

// probe is a table every caller creates with the same name and rows.
type probe struct {
	Name  string `gorm:"primaryKey"`
	Owner string
}

// Check writes the same table, row and key names as every other caller,
// over a few rounds long enough to overlap with them, and fails if it ever
// sees a row or key that is not its own.
func Check(t *testing.T) {
	t.Helper()
	pg := testcontainers.Postgres(t)
	rd := testcontainers.Redis(t)
	ctx := context.Background()
	if err := pg.DB.AutoMigrate(&probe{}); err != nil {
		t.Fatal(err)
	}
	me := rd.Namespace
	for round := 0; round < 10; round++ {
		row := probe{Name: fmt.Sprintf("probe-%d", round), Owner: me}
		if err := pg.DB.Create(&row).Error; err != nil {
			t.Fatalf("round %d: insert: %v (another test's row?)", round, err)
		}
		var owners []string
		if err := pg.DB.Model(&probe{}).Distinct().Pluck("owner", &owners).Error; err != nil {
			t.Fatal(err)
		}
		if len(owners) != 1 || owners[0] != me {
			t.Fatalf("round %d: rows of owners %v visible, want only %s", round, owners, me)
		}
		key := fmt.Sprintf("%s:probe:%d", me, round)
		if err := rd.Client.Set(ctx, key, me, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		keys, err := rd.Client.Keys(ctx, me+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != round+1 {
			t.Fatalf("round %d: %d keys in namespace %s, want %d", round, len(keys), me, round+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
