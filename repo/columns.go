package repo

import (
	"errors"

	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Reads and schema changes. pgx prepares each statement once per
// connection and reuses it; PostgreSQL re-plans it after an ALTER TABLE,
// but refuses with "cached plan must not change result type" (SQLSTATE
// 0A000) when the columns it returns have changed. So the repository's
// reads name their columns instead of "SELECT *": a migration that adds or
// drops another column leaves their result type alone. The model's
// columns must exist, as its writes need them anyway. A migration that
// changes the type of a column the model reads still changes the result
// type: a read outside a transaction that fails so is retried once
// (retryPlan).

// selectCols is the SELECT list of a row read: T's readable columns,
// made once by New.
func (c *core[T, ID]) selectCols() clause.Select { return c.readCols }

// readColumns returns the SELECT list of T's readable columns.
func readColumns(sch *schema.Schema) clause.Select {
	cols := make([]clause.Column, 0, len(sch.DBNames))
	for _, name := range sch.DBNames {
		if sch.FieldsByDBName[name].Readable {
			cols = append(cols, clause.Column{Table: clause.CurrentTable, Name: name})
		}
	}
	return clause.Select{Columns: cols}
}

// retryPlan runs query, and once more if it failed because a statement
// prepared before a migration now returns other types. pgx has dropped
// the statement from that connection by then, and database/sql hands out
// the idle connection returned last, most often that one, where the retry
// prepares it afresh (another connection may still hold its own stale
// copy: one more error). Inside a transaction the failure aborted the
// transaction: no retry.
func (r *Repository[T, ID]) retryPlan(query func() error) error {
	err := query()
	if err != nil && r.tx == nil && planChanged(err) {
		err = query()
	}
	return err
}

// planChanged reports whether err has SQLSTATE 0A000 (feature not
// supported): for the repository's plain reads, "cached plan must not
// change result type".
func planChanged(err error) bool {
	var pg interface{ SQLState() string } // *pgconn.PgError, without importing pgx
	return errors.As(err, &pg) && pg.SQLState() == "0A000"
}
