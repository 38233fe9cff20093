package seqgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

type stateErr string

func (e stateErr) Error() string    { return "SQLSTATE " + string(e) }
func (e stateErr) SQLState() string { return string(e) }

type retryErr bool

func (e retryErr) Error() string     { return "conn closed" }
func (e retryErr) SafeToRetry() bool { return bool(e) }

func TestSessionLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{stateErr("57P01"), true}, // admin_shutdown
		{stateErr("08006"), true}, // connection_failure
		{stateErr("40001"), false},
		{stateErr("23505"), false},
		{fmt.Errorf("failed to deallocate cached statement(s): %w", retryErr(true)), true},
		{retryErr(false), false},
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("seqgen: read mark: %w", io.EOF), true},
		{context.Canceled, false},
		{ErrExhausted, false},
		{errors.New("seqgen: SeedFrom: no table"), false},
	} {
		if got := sessionLost(c.err); got != c.want {
			t.Errorf("sessionLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
