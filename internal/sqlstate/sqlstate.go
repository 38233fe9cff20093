// Package sqlstate reads the SQLSTATE of a database error without
// importing a driver, and holds the one rule of which codes end a session.
package sqlstate

import (
	"errors"
	"strings"
)

// Of returns the SQLSTATE err carries (a *pgconn.PgError in its chain), and
// whether it carries one.
func Of(err error) (string, bool) {
	var pg interface{ SQLState() string }
	if !errors.As(err, &pg) {
		return "", false
	}
	return pg.SQLState(), true
}

// SessionEnded reports whether state is the code of a session the server
// is ending: class 08 (connection exception) or 57P (operator
// intervention: pg_terminate_backend, a shutdown). The statement that got
// it may have committed before the server said so.
func SessionEnded(state string) bool {
	return strings.HasPrefix(state, "08") || strings.HasPrefix(state, "57P")
}
