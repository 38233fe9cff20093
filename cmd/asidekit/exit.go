package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// Exit codes, for scripts.
const (
	exitOK          = 0 // done; what was checked agrees
	exitProblem     = 1 // done, and found a problem (cache and database disagree)
	exitUsage       = 2 // bad usage or input: unknown command, entity, malformed id, no --yes
	exitUnreachable = 3 // PostgreSQL or Redis did not answer
)

// exitError carries the exit code of an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr is a bad-usage error (exit 2).
func usageErr(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// unreachable wraps err, a failure to reach a server, for exit 3.
func unreachable(what string, err error) error {
	return &exitError{exitUnreachable, fmt.Errorf("%s unreachable: %w", what, err)}
}

// errProblem is returned by a command that printed a problem it found
// (exit 1): the output says what.
var errProblem = &exitError{exitProblem, errors.New("problem found")}

// codeOf returns the exit code of err.
func codeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case isUnreachable(err):
		return exitUnreachable
	}
	return exitProblem
}

// isUnreachable reports whether err says a server could not be reached
// (a refused or timed-out connection, a closed one), rather than that it
// refused a request.
func isUnreachable(err error) bool {
	var ne net.Error
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe):
		// The server answered; only a refused login or database means
		// the service's DSN does not work here.
		switch pe.Code[:2] {
		case "28", "3D", "08", "57":
			return true
		}
		return false
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.As(err, &ne):
		return true
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}
