package schema_test

import (
	"slices"
	"testing"

	"gorm.io/gorm"

	"github.com/asidekit/asidekit/internal/isolation"
	"github.com/asidekit/asidekit/schema"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.Main(m) }

func TestIsolation(t *testing.T) {
	t.Parallel()
	isolation.Check(t)
}

// ownTables are the only tables Migrate may create.
var ownTables = []string{"asidekit_config", "asidekit_seq_segments"}

func TestMigrate_postgres(t *testing.T) {
	t.Parallel()
	db := testcontainers.Postgres(t).DB
	for i := 0; i < 2; i++ { // the second run finds the tables in place
		if err := schema.Migrate(db); err != nil {
			t.Fatalf("migrate #%d: %v", i+1, err)
		}
	}
	var tables []string
	if err := db.Raw(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() ORDER BY table_name`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tables, ownTables) {
		t.Errorf("tables after Migrate = %v, want only %v", tables, ownTables)
	}
	checkOwnKeys(t, db)
}

// TestMigrate_leavesApplicationTablesAlone is the adoption case: the
// service already has its own orders (and users) tables, with columns and
// constraints asidekit's former sample models disagreed with. Migrate must
// leave every byte of their definitions as it found them.
func TestMigrate_leavesApplicationTablesAlone(t *testing.T) {
	t.Parallel()
	db := testcontainers.Postgres(t).DB
	for _, stmt := range []string{
		`CREATE TABLE orders (id bigserial PRIMARY KEY, serial varchar(32) NOT NULL,
			customer text, CONSTRAINT orders_serial_key UNIQUE (serial))`,
		`CREATE TABLE users (id text PRIMARY KEY, email varchar(100))`,
		`CREATE INDEX orders_customer_idx ON orders (customer)`,
	} {
		if err := db.Exec(stmt).Error; err != nil {
			t.Fatal(err)
		}
	}
	before := definitions(t, db)
	if err := schema.Migrate(db); err != nil {
		t.Fatal(err)
	}
	after := definitions(t, db)
	if !slices.Equal(before, after) {
		t.Errorf("application tables changed by Migrate:\nbefore %q\nafter  %q", before, after)
	}
	checkOwnKeys(t, db)
}

// definitions describes the orders and users tables: every column's type,
// length, nullability and default, every index and every constraint.
func definitions(t *testing.T, db *gorm.DB) []string {
	t.Helper()
	var out []string
	if err := db.Raw(`
		SELECT table_name || '.' || column_name || ' ' || data_type || '(' ||
			coalesce(character_maximum_length::text, '') || ') nullable=' || is_nullable ||
			' default=' || coalesce(column_default, '')
		FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name IN ('orders', 'users')
		UNION ALL
		SELECT indexdef FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename IN ('orders', 'users')
		UNION ALL
		SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
		FROM pg_constraint WHERE conrelid IN ('orders'::regclass, 'users'::regclass)
		ORDER BY 1`).Scan(&out).Error; err != nil {
		t.Fatal(err)
	}
	if len(out) < 8 {
		t.Fatalf("definitions read %d lines, want the tables' columns, indexes and constraints: %q", len(out), out)
	}
	return out
}

// checkOwnKeys checks the primary keys of asidekit's tables hold.
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
