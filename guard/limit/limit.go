package limit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/keys"
)

// Errors returned (wrapped) by this package; match them with errors.Is.
var (
	// ErrInvalid is returned for a configuration, key or n that cannot be
	// used. An invalid key also matches keys.ErrInvalid.
	ErrInvalid = errors.New("limit: invalid argument")
	// ErrLimited is returned when a call is refused and the API has no
	// Result to say so: Wait when the context's deadline would pass before
	// the call could be allowed, Semaphore.TryAcquire when every slot is
	// taken.
	ErrLimited = errors.New("limit: limited")
	// ErrFailedOpen is returned, together with the Redis error that caused
	// it, when Options.FailOpen let a call through because Redis failed.
	ErrFailedOpen = errors.New("limit: redis failed, call allowed (fail open)")
	// ErrBreakerOpen is returned, wrapped, by a call that did not ask
	// Redis because the limiter's breaker is open: Redis failed
	// Options.BreakerThreshold times in a row, and the limiter answers by
	// its fail policy at once until a probe finds Redis back. Under
	// FailOpen the error wraps ErrFailedOpen too.
	ErrBreakerOpen = errors.New("limit: redis unavailable (breaker open)")
	// ErrLeaseLost is returned by Lease.Release and Lease.Refresh when the
	// lease has expired (its slot may already belong to someone else) or the
	// key was reset.
	ErrLeaseLost = errors.New("limit: lease lost")
)

// Limiter decides whether calls under a key may happen now. Implementations
// in this package are safe for concurrent use and keep their state in Redis,
// so every Limiter of the same algorithm, namespace and key, in any process,
// shares one limit.
type Limiter interface {
	// Allow is AllowN(ctx, key, 1).
	Allow(ctx context.Context, key string) (Result, error)
	// AllowN reports whether n calls under key may happen now and, if so,
	// counts them. A refused call changes nothing (except that it starts a
	// lockout, see FixedWindow.LockTime). n must be in [1, Result.Limit]
	// (and, for a sliding log, at most MaxSlidingLogN).
	// On a Redis error it returns the error with Allowed=false, or with
	// Allowed=true under Options.FailOpen.
	AllowN(ctx context.Context, key string, n int) (Result, error)
	// Wait blocks until one call under key is allowed, sleeping RetryAfter
	// between attempts, and returns nil once it is. It returns ctx's error
	// when ctx ends first, and at once an error wrapping ErrLimited and
	// context.DeadlineExceeded when ctx's deadline would pass before the
	// next attempt. Under Options.FailOpen a Redis error ends Wait at once
	// with an error wrapping ErrFailedOpen: the caller may proceed.
	Wait(ctx context.Context, key string) error
	// Reset forgets everything counted under key.
	Reset(ctx context.Context, key string) error
	// Stats returns the limiter's counts of its own calls.
	Stats() Stats
}

// Result is the outcome of one AllowN call.
type Result struct {
	// Allowed is true if the calls may happen (and were counted).
	Allowed bool
	// Limit is the most calls the limiter allows at once: the limit per
	// window, the GCRA burst or the funnel's capacity.
	Limit int
	// Remaining is how many more single calls would be allowed right now.
	Remaining int
	// RetryAfter is, when Allowed is false, how long until the same call
	// could be allowed if nothing else happened meanwhile; 0 when Allowed.
	// When AllowN fails closed with ErrBreakerOpen, it is how long until
	// the breaker lets a probe through.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its initial state
	// (Remaining == Limit) if no more calls come.
	ResetAfter time.Duration

	// at is the Redis time of the decision, in microseconds since the Unix
	// epoch; 0 when Redis did not answer.
	at int64
}

// Options are the settings every limiter shares. A nil *Options means the
// defaults.
type Options struct {
	// Namespace starts every key. Default "ak". It may not contain
	// characters that keys would need to escape.
	Namespace string
	// FailOpen makes AllowN return Allowed=true when Redis fails (any error
	// from Redis or the connection, timeouts included, and every call while
	// the breaker is open), with an error that wraps ErrFailedOpen and the
	// Redis error (or ErrBreakerOpen); the Result's other fields but Limit
	// are zero, and nothing is counted. Wait then returns that error at
	// once, and Semaphore.TryAcquire and Acquire a lease Redis does not
	// know. Default false: fail closed, AllowN returns Allowed=false and the
	// error (Wait and Acquire return the error), so that a Redis outage
	// refuses every call; Kit.LimitOptions sets it (with LocalFallback)
	// unless told otherwise. A context that ends and invalid input are
	// never failed open. LocalFallback, when set, decides instead for
	// every limiter but a Semaphore.
	FailOpen bool
	// Timeout bounds each Redis call of the limiter, whatever the client's
	// own timeouts and retries: past it the call fails (by the fail
	// policy) and counts as a Redis failure for the breaker. A context
	// with a sooner deadline wins. A call that timed out may still have
	// reached Redis and been counted there. Default DefaultTimeout;
	// negative: no bound of the limiter's own (the client's timeouts and
	// the context's deadline only).
	//
	// With a client made with ContextTimeoutEnabled the call is made on the
	// caller's goroutine; otherwise go-redis would not stop a stalled read
	// before its ReadTimeout, so each call runs on a goroutine of its own
	// that is abandoned at the deadline.
	Timeout time.Duration
	// BreakerThreshold is the number of consecutive Redis failures
	// (timeouts, connection errors; not errors the server replies, such as
	// a script error) after which the limiter stops calling Redis for
	// BreakerCooldown and answers every call at once by its fail policy,
	// with an error wrapping ErrBreakerOpen. Then one call at a time
	// probes Redis: a success closes the breaker, a failure opens it for
	// another cooldown. Default DefaultBreakerThreshold; negative: no
	// breaker. Kit.LimitOptions sets it to -1 when the Kit has a node
	// guard, whose open breaker the limiter takes for its own (its calls
	// then fail at once with an error wrapping ErrBreakerOpen).
	BreakerThreshold int
	// BreakerCooldown is how long the breaker stays open before a call
	// probes Redis. Default DefaultBreakerCooldown; negative is invalid.
	BreakerCooldown time.Duration
	// LocalFallback, when > 0, is the number of processes that share the
	// limit: while Redis fails (an error, a timeout, the breaker open) a
	// limiter then decides in this process, with a token bucket per key
	// holding the limit divided by LocalFallback (rounded up) and refilled
	// at the limit's rate divided likewise, and returns its Result with a
	// nil error (counted in Stats.LocalFallbacks) instead of applying
	// FailOpen. The processes do not see each other's calls, so the fleet
	// allows about the limit while they share the load evenly. Semaphores
	// ignore it. Default 0: no fallback (Kit.LimitOptions sets it to the
	// Kit's Config.Processes unless FailOpen is set). Negative: no
	// fallback either, and Kit.LimitOptions leaves it so.
	LocalFallback int
}

// Defaults of Options fields.
const (
	DefaultTimeout          = 250 * time.Millisecond
	DefaultBreakerThreshold = 5
	DefaultBreakerCooldown  = time.Second
)

// init returns a copy of o (nil allowed) with the namespace checked and
// every zero field defaulted.
func (o *Options) init() (Options, error) {
	c, err := keys.CopyOptions(o, func(c *Options) *string { return &c.Namespace }, ErrInvalid)
	if err != nil {
		return c, err
	}
	if c.BreakerCooldown < 0 {
		return c, fmt.Errorf("%w: BreakerCooldown %v", ErrInvalid, c.BreakerCooldown)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.BreakerThreshold == 0 {
		c.BreakerThreshold = DefaultBreakerThreshold
	}
	if c.BreakerCooldown == 0 {
		c.BreakerCooldown = DefaultBreakerCooldown
	}
	return c, nil
}

// Client is the part of a go-redis client the limiters use; every
// redis.UniversalClient (Client, ClusterClient, Ring, failover) has it.
type Client interface {
	redis.Scripter
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}
