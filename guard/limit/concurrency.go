package limit

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/asidekit/asidekit/internal/script"
)

var (
	//go:embed acquire.lua
	acquireLua    string
	acquireScript = script.New(acquireLua)

	//go:embed release.lua
	releaseLua    string
	releaseScript = script.New(releaseLua)
)

// Concurrency configures NewConcurrency: at most Limit leases at once per
// key.
type Concurrency struct {
	// Limit is the number of calls allowed in flight at once. Required, in
	// [1, 2^53].
	Limit int
	// LeaseTTL is how long a lease lasts unless refreshed: the slot of a
	// holder that crashed comes back after at most LeaseTTL. Rounded up to a
	// microsecond. Default 30 s.
	LeaseTTL time.Duration
	// Poll is the longest Acquire sleeps between two attempts while every
	// slot is taken (a released slot is only seen at the next attempt); each
	// sleep is drawn in [Poll/2, Poll], or is shorter when a lease expires
	// sooner. Default 50 ms.
	Poll time.Duration
}

// Semaphore limits the calls in flight under each key, across processes:
// each call holds a lease on one of Limit slots, from Acquire (or
// TryAcquire) to Lease.Release. A lease expires after LeaseTTL unless
// refreshed, so the slot of a crashed holder comes back.
//
// It is not a Limiter: a slot is given back by Release, not by time, so
// Allow/AllowN would have nothing to return. Reset is the same as the
// Limiter's. Create one with NewConcurrency; it is safe for concurrent use.
type Semaphore struct {
	client   Client
	ns       string
	limit    int
	ttl      int64 // µs
	poll     time.Duration
	failOpen bool
	g        *guard
	ctr      counters
}

// NewConcurrency returns a Semaphore for cfg. Its state per key is a sorted
// set of leases, O(Limit).
func NewConcurrency(client Client, cfg Concurrency, opts *Options) (*Semaphore, error) {
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.Poll == 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if client == nil || cfg.Limit < 1 || int64(cfg.Limit) > maxExact || cfg.LeaseTTL < 0 || cfg.Poll < 0 {
		return nil, fmt.Errorf("%w: concurrency: want a client, Limit in [1, 2^53], LeaseTTL >= 0, Poll >= 0, got %+v", ErrInvalid, cfg)
	}
	o, err := opts.init()
	if err != nil {
		return nil, err
	}
	return &Semaphore{client: client, ns: o.Namespace, limit: cfg.Limit, ttl: micros(cfg.LeaseTTL), poll: cfg.Poll, failOpen: o.FailOpen, g: newGuard(client, o)}, nil
}

// Lease is one slot of a Semaphore, held from Acquire to Release.
type Lease struct {
	s     *Semaphore
	key   string // the Redis key; "" for a lease given by FailOpen
	token string
}

// TryAcquire takes a slot under key if one is free, and returns an error
// wrapping ErrLimited if none is. On a Redis error it returns the error, or
// under Options.FailOpen a lease that Redis does not know (its Release and
// Refresh do nothing) with an error wrapping ErrFailedOpen.
func (s *Semaphore) TryAcquire(ctx context.Context, key string) (*Lease, error) {
	l, _, err := s.try(ctx, key)
	return l, err
}

// try returns the lease, or the Result of a refused attempt.
func (s *Semaphore) try(ctx context.Context, key string) (*Lease, Result, error) {
	l, res, err := s.tryOnce(ctx, key)
	if errors.Is(err, ErrLimited) {
		s.ctr.count(false, nil) // a refusal, not a failure
	} else {
		s.ctr.count(l != nil, err)
	}
	return l, res, err
}

func (s *Semaphore) tryOnce(ctx context.Context, key string) (*Lease, Result, error) {
	k, err := stateKey(s.ns, "cc", key)
	if err != nil {
		return nil, Result{}, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics if it could not read)
	token := hex.EncodeToString(b[:])
	var reply []int64
	err = s.g.do(ctx, func(ctx context.Context) error {
		var err error
		reply, err = acquireScript.Run(ctx, s.client, []string{k}, s.limit, s.ttl, token).Int64Slice()
		return err
	})
	var res Result
	if err == nil {
		res, err = parseReply(reply)
	}
	if err != nil {
		if ctx.Err() == nil && s.failOpen {
			return &Lease{s: s, token: token}, Result{}, fmt.Errorf("%w: %w", ErrFailedOpen, err)
		}
		return nil, Result{}, fmt.Errorf("limit: acquire: %w", err)
	}
	if !res.Allowed {
		return nil, res, fmt.Errorf("%w: %d of %d slots taken", ErrLimited, s.limit, s.limit)
	}
	return &Lease{s: s, key: k, token: token}, res, nil
}

// Acquire takes a slot under key, waiting while none is free: it tries
// again after at most Poll (sooner if a lease expires sooner) until it gets
// one. It returns ctx's error if ctx ends first, and an error wrapping
// ErrLimited and context.DeadlineExceeded, without sleeping, when ctx's
// deadline would pass before the next attempt. Redis errors end it as they
// end TryAcquire.
func (s *Semaphore) Acquire(ctx context.Context, key string) (*Lease, error) {
	var lease *Lease
	err := wait(ctx, func() (Result, error) {
		l, res, err := s.try(ctx, key)
		switch {
		case l != nil: // acquired, or failed open (then err says so)
			lease = l
			return Result{Allowed: true}, err
		case errors.Is(err, ErrLimited):
			res.RetryAfter = min(res.RetryAfter, s.poll/2+mrand.N(s.poll/2+1))
			return res, nil
		default:
			return Result{}, err
		}
	})
	return lease, err
}

// Reset drops every lease under key: their holders' Release and Refresh
// then return ErrLeaseLost.
func (s *Semaphore) Reset(ctx context.Context, key string) error {
	k, err := stateKey(s.ns, "cc", key)
	if err != nil {
		return err
	}
	return reset(ctx, s.g, s.client, k)
}

// Release gives the slot back. It returns an error wrapping ErrLeaseLost if
// the lease had already expired or the key was reset (the slot was free
// again before Release), and the Redis error if Redis fails (the lease then
// expires after its LeaseTTL).
func (l *Lease) Release(ctx context.Context) error {
	return l.update(ctx, 0)
}

// Refresh extends the lease to LeaseTTL from now. It returns an error
// wrapping ErrLeaseLost if the lease had already expired or the key was
// reset; the caller no longer holds a slot then.
func (l *Lease) Refresh(ctx context.Context) error {
	return l.update(ctx, l.s.ttl)
}

func (l *Lease) update(ctx context.Context, ttl int64) error {
	if l.key == "" {
		return nil // given by FailOpen: Redis knows nothing of it
	}
	var held int
	err := l.s.g.do(ctx, func(ctx context.Context) error {
		var err error
		held, err = releaseScript.Run(ctx, l.s.client, []string{l.key}, l.token, ttl).Int()
		return err
	})
	if err != nil {
		return fmt.Errorf("limit: lease: %w", err)
	}
	if held == 0 {
		return ErrLeaseLost
	}
	return nil
}
