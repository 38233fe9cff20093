package seqgen

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
)

// sessionLost reports whether err is the loss of the DB session a
// reservation ran on rather than an answer to it: the server ending the
// session (SQLSTATE classes 08, connection exception, and 57P, operator
// intervention: pg_terminate_backend, a shutdown), or a connection that
// broke, was closed, or that the driver marks as safe to retry because
// nothing was sent on it. Any other server error is an answer, and a
// second try would get it again.
func sessionLost(err error) bool {
	var pg interface{ SQLState() string } // *pgconn.PgError, without importing pgx
	if errors.As(err, &pg) {
		state := pg.SQLState()
		return strings.HasPrefix(state, "08") || strings.HasPrefix(state, "57P")
	}
	var retry interface{ SafeToRetry() bool } // pgconn's errors for a closed or unused connection
	if errors.As(err, &retry) && retry.SafeToRetry() {
		return true
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.As(err, &ne)
}
