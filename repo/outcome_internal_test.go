package repo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// The rule that tells a write that certainly failed from one whose outcome
// is unknown.
func TestUnknownOutcome(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("update: %w", &pgconn.PgError{Code: code}) }
	for _, c := range []struct {
		name    string
		err     error
		unknown bool
	}{
		{"nil", nil, false},
		{"duplicate", dbErr(pg("23505")), false},
		{"foreign key", pg("23503"), false},
		{"serialization failure at COMMIT", pg("40001"), false},
		{"statement cancelled", pg("57014"), false},
		{"gorm refusal", fmt.Errorf("x: %w", gorm.ErrMissingWhereClause), false},
		{"transaction over", sql.ErrTxDone, false},
		{"no connection", fmt.Errorf("failed to connect: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), false},
		{"connection reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{"connection failure reported by the server", pg("08006"), true},
		{"backend terminated", pg("57P01"), true},
		{"reply lost", fmt.Errorf("create: %w", io.ErrUnexpectedEOF), true},
		{"conn closed", errors.New("conn closed"), true},
		{"context ended", fmt.Errorf("commit: %w", context.DeadlineExceeded), true},
	} {
		if got := unknownOutcome(c.err); got != c.unknown {
			t.Errorf("%s: unknownOutcome(%v) = %v, want %v", c.name, c.err, got, c.unknown)
		}
	}
}
