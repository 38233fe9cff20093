package limit

// The field's names for GCRA and Funnel. A token bucket refilled at a rate
// and a leaky bucket that drains at one allow the same calls: an idle key
// takes a burst at once, then calls at the steady rate. GCRA computes the
// token bucket from one timestamp per key; Funnel keeps the leaky bucket's
// level. The names below are the same types and constructors, so a
// TokenBucket limiter and a GCRA limiter of the same namespace and key share
// their state (and so do LeakyBucket and Funnel).

// TokenBucket configures NewTokenBucket: a bucket of at most Burst tokens
// (default Rate.Limit) refilled at Rate; a call takes one token. It is GCRA
// under the name the field uses.
type TokenBucket = GCRA

// NewTokenBucket returns a token-bucket Limiter: NewGCRA under the name the
// field uses. Keys live under the "gcra" algorithm.
func NewTokenBucket(client Client, cfg TokenBucket, opts *Options) (Limiter, error) {
	return NewGCRA(client, cfg, opts)
}

// LeakyBucket configures NewLeakyBucket: a bucket of Capacity units that
// leaks at Leak; a call pours one unit in and is refused if the bucket
// would overflow. It is Funnel under the name the field uses.
type LeakyBucket = Funnel

// NewLeakyBucket returns a leaky-bucket Limiter: NewFunnel under the name
// the field uses. Keys live under the "fun" algorithm.
func NewLeakyBucket(client Client, cfg LeakyBucket, opts *Options) (Limiter, error) {
	return NewFunnel(client, cfg, opts)
}
