package compat_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// shelfItem maps the table of repo's ownership tests.
type shelfItem struct {
	ID   int64 `gorm:"primaryKey"`
	Name string
}

func (shelfItem) TableName() string { return "shelf_items" }

// On SQLite the owner is the database file. The registry is in a real
// Redis (a namespace of the test's own); repo's other ownership tests run
// on PostgreSQL.
func TestNew_namespaceCollision_sqlite(t *testing.T) {
	t.Parallel()
	rn := testcontainers.Redis(t)
	open := func(path string) *gorm.DB {
		db, err := gorm.Open(sqlite.Open("file:"+path), &gorm.Config{Logger: logger.Discard})
		if err != nil {
			t.Fatal(err)
		}
		sqlDB, _ := db.DB()
		t.Cleanup(func() { _ = sqlDB.Close() })
		if err := db.AutoMigrate(&shelfItem{}); err != nil {
			t.Fatal(err)
		}
		return db
	}
	// newCache returns a new Cache on the namespace, as another process has.
	newCache := func() *cacheaside.Cache {
		c, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	dir := t.TempDir()
	a, b := open(filepath.Join(dir, "a.db")), open(filepath.Join(dir, "b.db"))
	if _, err := repo.New[shelfItem, int64](a, newCache(), &repo.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.New[shelfItem, int64](a, newCache(), &repo.Options{}); err != nil {
		t.Fatalf("New on the same file again = %v", err)
	}
	_, err := repo.New[shelfItem, int64](b, newCache(), &repo.Options{})
	if !errors.Is(err, repo.ErrNamespaceCollision) || !strings.Contains(err.Error(), "a.db table shelf_items") {
		t.Fatalf("New on another file = %v, want ErrNamespaceCollision", err)
	}
}
