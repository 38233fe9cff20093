package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// dbRow is a row as the database holds it.
type dbRow struct {
	Found bool `json:"found"`
	// ID is the primary key as text (PostgreSQL's output of the column,
	// which is the cache id of integer, text and uuid keys).
	ID  string          `json:"id,omitempty"`
	Row json.RawMessage `json:"row,omitempty"`
	// SoftDeleted: the row exists with a non-null deleted_at, which the
	// repository reads as absent.
	SoftDeleted bool `json:"soft_deleted,omitempty"`
}

// quoteTable quotes a table name, optionally schema-qualified.
func quoteTable(t string) string { return pgx.Identifier(strings.Split(t, ".")).Sanitize() }

func quoteCol(c string) string { return pgx.Identifier{c}.Sanitize() }

// readRow reads the row of e whose column col equals value (given as text;
// PostgreSQL casts it to the column's type).
func readRow(ctx context.Context, db *gorm.DB, e *EntityConfig, col, value string) (dbRow, error) {
	q := fmt.Sprintf("SELECT t.%s::text, row_to_json(t)::text FROM %s t WHERE t.%s = ? LIMIT 1",
		quoteCol(e.Key), quoteTable(e.Table), quoteCol(col))
	var id, doc string
	rows, err := db.WithContext(ctx).Raw(q, value).Rows()
	if err != nil {
		return dbRow{}, dbErr(e, col, value, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return dbRow{}, dbErr(e, col, value, rows.Err())
	}
	if err := rows.Scan(&id, &doc); err != nil {
		return dbRow{}, dbErr(e, col, value, err)
	}
	r := dbRow{Found: true, ID: id, Row: json.RawMessage(doc)}
	var m map[string]any
	if json.Unmarshal(r.Row, &m) == nil && m["deleted_at"] != nil {
		r.Found, r.SoftDeleted = false, true
	}
	return r, nil
}

// dbErr classifies a query's error: bad input (exit 2) when PostgreSQL
// refuses the value or does not know the table or column.
func dbErr(e *EntityConfig, col, value string, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "22P02", "22003", "22007", "22008", "22021":
			return usageErr("%s: malformed %s %q: %s", e.Name, col, value, pe.Message)
		case "42P01", "42703", "3F000":
			return usageErr("%s: %s (check the config's table and columns)", e.Name, pe.Message)
		}
	}
	if isUnreachable(err) {
		return unreachable("PostgreSQL", err)
	}
	return fmt.Errorf("%s: read %s: %w", e.Name, e.Table, err)
}
