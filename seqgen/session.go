package seqgen

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"

	"github.com/asidekit/asidekit/internal/sqlstate"
)

// sessionLost reports whether err is the loss of the DB session a
// reservation ran on rather than an answer to it: the server ending the
// session (SQLSTATE classes 08, connection exception, and 57P, operator
// intervention: pg_terminate_backend, a shutdown), or a connection that
// broke, was closed, or that the driver marks as safe to retry because
// nothing was sent on it. Any other server error is an answer, and a
// second try would get it again.
func sessionLost(err error) bool {
	if state, ok := sqlstate.Of(err); ok {
		return sqlstate.SessionEnded(state)
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
