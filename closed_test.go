package asidekit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit"
	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/seqgen"
	"github.com/asidekit/asidekit/testcontainers"
)

type closedItem struct {
	ID   int64 `gorm:"primaryKey;autoIncrement:false"`
	Name string
}

// After Kit.Close (twice, nil both times) every write of a repository on
// its Cache returns ErrClosed and writes nothing, serials return
// seqgen.ErrClosed, and reads go on.
func TestKit_Close_writesRefused(t *testing.T) {
	r := testcontainers.Redis(t)
	pg := testcontainers.Postgres(t)
	if err := schema.Migrate(pg.DB); err != nil {
		t.Fatal(err)
	}
	if err := pg.DB.AutoMigrate(&closedItem{}); err != nil {
		t.Fatal(err)
	}
	kit, err := asidekit.New(asidekit.Config{Namespace: r.Namespace + "svc", Redis: r.Client, DB: pg.DB})
	if err != nil {
		t.Fatal(err)
	}
	items, err := repo.New[closedItem, int64](pg.DB, kit.Cache(), &repo.Options{Policy: cacheaside.Policy{TTL: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = items.Close() })
	gen, err := kit.Generator(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := items.Create(ctx, &closedItem{ID: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Next(ctx, "ORD"); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := kit.Close(); err != nil {
			t.Fatalf("Close %d: %v", i, err)
		}
	}
	for name, write := range map[string]func() error{
		"Create": func() error { return items.Create(ctx, &closedItem{ID: 2, Name: "b"}) },
		"Put":    func() error { return items.Put(ctx, &closedItem{ID: 3, Name: "c"}) },
		"Update": func() error { return items.Update(ctx, &closedItem{ID: 1, Name: "x"}) },
		"UpdateColumns": func() error {
			return items.UpdateColumns(ctx, &closedItem{ID: 1, Name: "x"}, "name")
		},
		"Modify": func() error {
			_, err := items.Modify(ctx, 1, map[string]any{"name": "x"})
			return err
		},
		"Delete":     func() error { return items.Delete(ctx, 1) },
		"CreateMany": func() error { return items.CreateMany(ctx, []closedItem{{ID: 4, Name: "d"}}) },
		"PutMany":    func() error { return items.PutMany(ctx, []closedItem{{ID: 5, Name: "e"}}) },
		"Next": func() error {
			_, err := gen.Next(ctx, "ORD")
			if errors.Is(err, seqgen.ErrClosed) {
				return asidekit.ErrClosed // the generator's own sentinel
			}
			return err
		},
	} {
		if err := write(); !errors.Is(err, asidekit.ErrClosed) || !errors.Is(err, repo.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	var rows []closedItem
	if err := pg.DB.Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0] != (closedItem{ID: 1, Name: "a"}) {
		t.Errorf("rows after the refused writes: %+v, want only {1 a}", rows)
	}
	if v, err := items.Get(ctx, 1); err != nil || v.Name != "a" {
		t.Errorf("Get after Close: %+v, %v; reads go on", v, err)
	}
}
