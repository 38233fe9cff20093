// Package sample holds the small domain (users, rental listings, orders)
// that asidekit's tests, examples and benchmarks store with repo. It is not
// part of the library: schema.Migrate never creates these tables.
package sample

import (
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/schema"
)

// Models returns a new instance of every sample model.
func Models() []any { return []any{&User{}, &Listing{}, &Order{}} }

// Migrate creates asidekit's own tables (schema.Migrate) and the sample
// tables, with GORM's AutoMigrate, on PostgreSQL and on SQLite.
func Migrate(db *gorm.DB) error {
	if err := schema.Migrate(db); err != nil {
		return err
	}
	if err := db.AutoMigrate(Models()...); err != nil {
		return fmt.Errorf("sample: migrate: %w", err)
	}
	return nil
}

// User is the sample domain's account: a primary key, a unique email.
type User struct {
	ID        int64     `gorm:"primaryKey" json:"id"`
	Email     string    `gorm:"size:320;not null;uniqueIndex" json:"email"`
	Name      string    `gorm:"size:200;not null" json:"name"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Member is an account with two unique columns besides its primary key,
// for the tests of what a write does to the mappings of several unique
// keys. Migrate does not create its table: AutoMigrate it.
type Member struct {
	ID     int64  `gorm:"primaryKey"`
	Email  string `gorm:"size:320;not null;uniqueIndex"`
	Handle string `gorm:"size:64;not null;uniqueIndex"`
	Name   string `gorm:"size:200;not null"`
}

// Listing is a rental listing. The same flat (address + room) may be
// submitted many times; the unique index on both makes it the
// de-duplication example.
type Listing struct {
	ID        int64     `gorm:"primaryKey" json:"id"`
	Address   string    `gorm:"size:500;not null;uniqueIndex:idx_listing_address_room,priority:1" json:"address"`
	Room      string    `gorm:"size:50;not null;uniqueIndex:idx_listing_address_room,priority:2" json:"room"`
	Rent      int64     `gorm:"not null" json:"rent"` // per month, in cents
	CreatedAt time.Time `json:"created_at"`
}

// Order is a purchase by a user, identified to people by a unique serial
// number such as ORD2026112900001.
type Order struct {
	ID        int64     `gorm:"primaryKey" json:"id"`
	Serial    string    `gorm:"size:64;not null;uniqueIndex" json:"serial"`
	UserID    int64     `gorm:"not null;index" json:"user_id"`
	Amount    int64     `gorm:"not null" json:"amount"` // in cents
	CreatedAt time.Time `json:"created_at"`
}
