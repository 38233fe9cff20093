package cdc

import (
	"context"
	"errors"
	"testing"
	"time"
)

// passedDeadline is a context whose deadline has passed but whose timer
// has not fired yet: Err is still nil.
type passedDeadline struct{ context.Context }

func (passedDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (passedDeadline) Err() error                  { return nil }

// A dial cut short by the deadline reports "i/o timeout"; ctxErr makes it
// match context.DeadlineExceeded even when the connection's timer fired
// before the context's own.
func TestCtxErr_deadlinePassed(t *testing.T) {
	dial := errors.New("dial tcp: i/o timeout")
	if err := ctxErr(passedDeadline{context.Background()}, dial); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, dial) {
		t.Errorf("ctxErr with a passed deadline = %v; want it to match DeadlineExceeded and the dial error", err)
	}
	if err := ctxErr(context.Background(), dial); err != dial {
		t.Errorf("ctxErr without a deadline = %v; want the error as it is", err)
	}
	later, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := ctxErr(later, dial); err != dial {
		t.Errorf("ctxErr before the deadline = %v; want the error as it is", err)
	}
}
