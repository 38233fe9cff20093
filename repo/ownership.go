package repo

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"

	"github.com/asidekit/asidekit/cacheaside"
	"github.com/asidekit/asidekit/internal/owner"
)

// Ownership says how New claims the entity's name in the Cache's
// namespace. The zero value is OwnershipCheck.
type Ownership int

const (
	// OwnershipCheck claims the name for this table of this database in
	// the namespace's registry, and New fails with ErrNamespaceCollision
	// when a repository over another database or table holds it.
	OwnershipCheck Ownership = iota
	// OwnershipTakeOver claims the name even when another owner holds it,
	// replacing that owner: once, after moving the service to a new
	// database (a restore or a logical-replication upgrade gives the
	// server a new identity), when the old owner is gone for good.
	OwnershipTakeOver
	// OwnershipShared neither checks nor claims: for entities shared on
	// purpose by services that know they cache the same rows the same way.
	OwnershipShared
)

var (
	// ErrNamespaceCollision is returned by New when another owner — a
	// repository over another database, or another table — holds the
	// entity's name in the namespace: the two would read and overwrite
	// each other's cache entries. The message names the entity, the
	// namespace and both owners. Set a distinct Namespace (the Cache's, or
	// asidekit.Config's) or Options.Name; Options.Ownership overrides the
	// check. New writes nothing to Redis when it returns this error.
	ErrNamespaceCollision = errors.New("repo: namespace collision")

	// ErrOwnershipUnchecked is what Repository.Claim returns (wrapped, with
	// the cause) when New could not check the entity's owner: Redis or the
	// database did not answer within ClaimTimeout. New does not fail for
	// it (the repository fails open, as its reads do); it logs a warning.
	ErrOwnershipUnchecked = errors.New("repo: entity ownership not checked")
)

// ClaimTimeout bounds New's ownership check: the database queries that
// identify the table and the Redis round trip of the claim.
const ClaimTimeout = 5 * time.Second

// claimName checks and claims the entity's name as Options.Ownership says.
// It returns ErrNamespaceCollision (New fails), or an error matching
// ErrOwnershipUnchecked when the check could not run (New goes on).
func claimName(db *gorm.DB, cache *cacheaside.Cache, sch *schema.Schema, name string, mode Ownership) (collision, unchecked error) {
	if mode == OwnershipShared {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), ClaimTimeout)
	defer cancel()
	ns := cache.Namespace()
	id, err := tableIdentity(ctx, db, sch.Table)
	if err != nil {
		return nil, owner.Unchecked(ErrOwnershipUnchecked, ns, name, fmt.Errorf("identify the database: %w", err))
	}
	rec := owner.Record{Owner: id, Model: modelShape(sch)}
	return owner.Check(ctx, cache.Client(), ns, name, rec, mode == OwnershipTakeOver, ErrNamespaceCollision, ErrOwnershipUnchecked,
		"set a distinct Namespace or Options.Name (or Options.Ownership, to share or take it over on purpose)")
}

// tableIdentity names the database server, the database and the
// schema-qualified table that a repository over table reads.
//
// PostgreSQL: the cluster's system identifier (pg_control_system(), shared
// by a primary and its physical replicas, so instances that reach it by
// different addresses agree), else — when the role may not call it — the
// server's address and port; then current_database() and the schema the
// table resolves to (current_schema() for a table not created yet).
// SQLite: the main database's file (":memory:" for an in-memory one).
// Other dialects: the dialect and the table only.
func tableIdentity(ctx context.Context, db *gorm.DB, table string) (string, error) {
	pool := db.ConnPool
	switch dialect := db.Dialector.Name(); dialect {
	case "postgres":
		var server, database, schemaName string
		if err := pool.QueryRowContext(ctx, `SELECT system_identifier::text FROM pg_control_system()`).Scan(&server); err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			err := pool.QueryRowContext(ctx, `SELECT coalesce(host(inet_server_addr()), 'local') || ':' || coalesce(inet_server_port()::text, '')`).Scan(&server)
			if err != nil {
				return "", err
			}
		}
		rel, qualified := table, strings.Contains(table, ".")
		if !qualified {
			rel = `"` + strings.ReplaceAll(table, `"`, `""`) + `"`
		}
		err := pool.QueryRowContext(ctx, `SELECT current_database(), coalesce(
			(SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)),
			current_schema(), '')`, rel).Scan(&database, &schemaName)
		if err != nil {
			return "", err
		}
		if !qualified {
			table = schemaName + "." + table
		}
		return fmt.Sprintf("postgres %s database %s table %s", server, database, table), nil
	case "sqlite":
		var file string
		if err := pool.QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&file); err != nil {
			return "", err
		}
		if file == "" {
			file = ":memory:"
		}
		return fmt.Sprintf("sqlite %s table %s", file, table), nil
	default:
		return fmt.Sprintf("%s table %s", dialect, table), nil
	}
}

// modelShape describes the Go model: its type and its columns with their
// Go types, e.g. "main.Product{id string, name string, …}".
func modelShape(sch *schema.Schema) string {
	var cols []string
	for _, f := range sch.Fields {
		if f.DBName != "" {
			cols = append(cols, f.DBName+" "+f.FieldType.String())
		}
	}
	slices.Sort(cols)
	return reflectName(sch.ModelType) + "{" + strings.Join(cols, ", ") + "}"
}

func reflectName(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// Claim returns nil when New checked the entity's owner (or
// Options.Ownership is OwnershipShared), and an error matching
// ErrOwnershipUnchecked, with the cause, when it could not.
func (r *Repository[T, ID]) Claim() error { return r.c.claimErr }
