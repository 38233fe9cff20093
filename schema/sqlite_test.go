package schema_test

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
