package limit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/breaker"
	"github.com/asidekit/asidekit/internal/nodeguard"
	"github.com/asidekit/asidekit/internal/topology"
)

// guard is the one door of a limiter's Redis calls: it bounds each call
// with the limiter's own deadline and keeps the breaker. Every field but
// the breaker's state is set by the constructor and never changes.
type guard struct {
	timeout time.Duration // <= 0: no deadline of the limiter's own
	// inline is true when the client's socket reads and writes end at the
	// context's deadline (ContextTimeoutEnabled): a call is then made on
	// the caller's goroutine. Otherwise a stalled read would last the
	// client's ReadTimeout whatever the context says, so the call runs on
	// a goroutine of its own that the caller stops waiting for at the
	// deadline.
	inline bool
	br     breaker.Breaker
}

// newGuard returns the guard of a limiter on client with the options o
// (already defaulted by Options.init).
func newGuard(client Client, o Options) *guard {
	return &guard{
		timeout: o.Timeout,
		inline:  honoursDeadline(client),
		br:      breaker.Breaker{Threshold: int64(o.BreakerThreshold), Cooldown: o.BreakerCooldown},
	}
}

// do makes one Redis call through the breaker, under the limiter's
// deadline (or the caller's, when that is sooner). It returns an error
// wrapping ErrBreakerOpen, without calling, while the breaker is open.
// call must keep what it reads in variables of its caller, which may read
// them once do returned nil.
func (g *guard) do(ctx context.Context, call func(context.Context) error) error {
	if !g.br.Allow() {
		return ErrBreakerOpen
	}
	err := g.bounded(ctx, call)
	switch {
	case err == nil:
		g.br.Success()
	case ctx.Err() != nil:
		// The caller gave up: that says nothing about Redis. A probe
		// that ends so leaves the breaker half-open; another probe goes
		// after another cooldown.
	case unavailable(err):
		g.br.Failure()
	default:
		g.br.Success() // the server answered, with an error of its own
	}
	if errors.Is(err, nodeguard.ErrDown) {
		// A Kit's node guard refused the call: its breaker is open.
		return fmt.Errorf("%w: %w", ErrBreakerOpen, err)
	}
	return err
}

func (g *guard) bounded(ctx context.Context, call func(context.Context) error) error {
	if g.timeout <= 0 {
		return call(ctx)
	}
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > g.timeout {
		var cancel context.CancelFunc
		// Marked as a call bound, so that a Kit's node guard counts a
		// call that runs out of it as a node failure (the caller did not
		// give up: the node did not answer in time).
		ctx, cancel = nodeguard.WithBound(ctx, g.timeout)
		defer cancel()
	}
	if g.inline {
		return call(ctx)
	}
	done := make(chan error, 1) // never blocks the call's goroutine
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		// The call may still reach Redis, and a script may still count
		// its calls: like any call that times out, it is undecided.
		return ctx.Err()
	}
}

// retryAfter returns how long until the breaker lets a probe through; 0
// when it is closed.
func (g *guard) retryAfter() time.Duration { return g.br.RetryAfter() }

// honoursDeadline reports whether client's socket reads and writes end at
// the context's deadline.
func honoursDeadline(client Client) bool {
	uc, _ := client.(redis.UniversalClient) // nil (unsupported) for a narrower one
	to, ok := topology.Of(uc).Timeouts()
	// -2 disables SetReadDeadline / SetWriteDeadline altogether.
	return ok && to.ContextTimeoutEnabled && to.Read != -2 && to.Write != -2
}

// unavailable reports whether err says that Redis could not serve a call
// (a breaker failure): every error but a server's reply (timeouts, refused
// or broken connections, a closed client, an exhausted pool), and the
// replies of a server that cannot serve yet. A script error or any other
// reply is the server at work: no failure.
func unavailable(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return true
	}
	for _, p := range [...]string{"LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
