// Package schema holds the GORM models of asidekit's own tables and of a
// small sample domain (users, rental listings, orders) used by the examples,
// tests and benchmarks. Migrate creates them all with GORM's AutoMigrate, on
// PostgreSQL and on SQLite.
package schema

import (
	"fmt"

	"gorm.io/gorm"
)

// Models returns a new instance of every model Migrate creates: asidekit's
// own tables first, then the sample domain.
func Models() []any {
	return []any{
		// asidekit's own tables.
		&Config{},
		&SeqSegment{},

		// The sample domain.
		&User{},
		&Listing{},
		&Order{},
	}
}

// Migrate creates or updates every table of Models with AutoMigrate.
func Migrate(db *gorm.DB) error {
	if err := db.AutoMigrate(Models()...); err != nil {
		return fmt.Errorf("schema: migrate: %w", err)
	}
	return nil
}
