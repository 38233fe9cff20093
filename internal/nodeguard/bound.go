package nodeguard

import (
	"context"
	"errors"
	"time"
)

// errBound is the cause of a context ended by a package's bound on its
// Redis call (WithBound).
var errBound = errors.New("asidekit: redis call bound reached")

// WithBound returns ctx bounded by d, the deadline a package puts on one
// Redis call of its own (a limiter's Options.Timeout, for one). A call
// that runs out of it is a node failure for the guard, as a call that
// ran out of the guard's own Timeout is: the node did not answer within
// the bound. A call whose caller's context ended first (cancelled, or its
// own deadline) says nothing about the node and is not counted.
func WithBound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errBound)
}

// boundReached reports whether ctx ended because a package's call bound
// passed (WithBound), not because the caller gave up.
func boundReached(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errBound)
}
