package compat_test

import (
	"testing"

	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/asidekit/asidekit/schema"
)

// SQLite is the embedded backend of the demo and benchmarks.
func TestMigrate_sqlite(t *testing.T) {
	db, err := gorm.Open(sqlite.Open("file::memory:"), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Migrate(db); err != nil {
		t.Fatal(err)
	}
	checkOwnKeys(t, db)
}

// checkOwnKeys checks the primary keys of asidekit's tables hold (a copy of
// schema's test helper, which the PostgreSQL tests there use too).
func checkOwnKeys(t *testing.T, db *gorm.DB) {
	t.Helper()
	v := "v"
	cfg := schema.Config{Namespace: "ns", Key: "k", Value: &v}
	if err := db.Create(&cfg).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&schema.Config{Namespace: "ns", Key: "k", Value: &v}).Error; err == nil {
		t.Error("duplicate config (namespace, key) accepted")
	}
	seg := schema.SeqSegment{Biz: "ORD", Day: "20261129", HighWater: 1}
	if err := db.Create(&seg).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&schema.SeqSegment{Biz: "ORD", Day: "20261129"}).Error; err == nil {
		t.Error("duplicate segment (biz, day) accepted")
	}
}
