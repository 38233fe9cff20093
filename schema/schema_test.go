package schema_test

import (
	"testing"

	"github.com/asidekit/asidekit/internal/isolation"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
	"gorm.io/gorm"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

// TestIsolation runs in parallel with the same test in package
// testcontainers: both write the same row and key names on one server.
func TestIsolation(t *testing.T) {
	t.Parallel()
	isolation.Check(t)
}

func TestMigrate_postgres(t *testing.T) {
	t.Parallel()
	db := testcontainers.Postgres(t).DB
	if err := schema.Migrate(db); err != nil {
		t.Fatal(err)
	}
	if err := schema.Migrate(db); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	checkUniqueIndexes(t, db)
}

func checkUniqueIndexes(t *testing.T, db *gorm.DB) {
	t.Helper()
	if err := db.Create(&schema.User{Email: "a@example.com", Name: "A"}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&schema.User{Email: "a@example.com", Name: "B"}).Error; err == nil {
		t.Error("duplicate email accepted")
	}
	if err := db.Create(&schema.Listing{Address: "1 Main St", Room: "2B", Rent: 100}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&schema.Listing{Address: "1 Main St", Room: "3A", Rent: 100}).Error; err != nil {
		t.Fatalf("same address, other room: %v", err)
	}
	if err := db.Create(&schema.Listing{Address: "1 Main St", Room: "2B", Rent: 90}).Error; err == nil {
		t.Error("duplicate address + room accepted")
	}
	if err := db.Create(&schema.Order{Serial: "ORD2026112900001", UserID: 1, Amount: 5}).Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Create(&schema.Order{Serial: "ORD2026112900001", UserID: 2, Amount: 5}).Error; err == nil {
		t.Error("duplicate serial accepted")
	}
}
