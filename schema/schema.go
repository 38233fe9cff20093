// Package schema holds the GORM models of asidekit's own tables:
// asidekit_config (repo/configstore) and asidekit_seq_segments (seqgen).
// Migrate creates them with GORM's AutoMigrate, on PostgreSQL and on SQLite.
//
// Migrate touches only those tables. It never creates an application table
// and never alters a table whose name is not one of Models' table names, so
// it is safe to run on a database that already holds the service's own
// schema (an orders table, say).
package schema

import (
	"fmt"

	"gorm.io/gorm"
)

// Models returns a new instance of each of asidekit's own models, the
// tables Migrate creates.
func Models() []any {
	return []any{&Config{}, &SeqSegment{}}
}

// Migrate creates or updates asidekit's own tables (Models) with
// AutoMigrate, and nothing else.
func Migrate(db *gorm.DB) error {
	if err := db.AutoMigrate(Models()...); err != nil {
		return fmt.Errorf("schema: migrate: %w", err)
	}
	return nil
}
