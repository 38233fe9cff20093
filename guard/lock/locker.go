package lock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/fanout"
	"github.com/asidekit/asidekit/internal/keys"
	"github.com/asidekit/asidekit/internal/token"
)

// Locker obtains locks on one Redis deployment: a standalone server, a
// Sentinel-managed primary, or a Cluster. It is safe for concurrent use;
// create one per process and share it, so that all its waiters share one
// subscription. Close it when done.
type Locker struct {
	client  redis.UniversalClient
	opts    Options
	channel string      // the namespace's unlock channel
	n       *fanout.Hub // the shared subscription: one wake-up per release
	stats   counters

	// Script arguments boxed once, not on every call.
	channelArg any // channel
	markArg    any // how long a waiting mark outlasts the holder, in ms
}

// Obtainer is what a Locker and a Redlock have in common: code that needs
// a lock can take either.
type Obtainer interface {
	// Obtain waits for the lock until it is obtained, ctx ends, or the wait
	// bound passes.
	Obtain(ctx context.Context, name string, ttl time.Duration, opts *ObtainOptions) (*Lock, error)
	// TryObtain tries once and returns ErrNotObtained if the lock is held.
	TryObtain(ctx context.Context, name string, ttl time.Duration) (*Lock, error)
}

var (
	_ Obtainer = (*Locker)(nil)
	_ Obtainer = (*Redlock)(nil)
)

// New returns a Locker that keeps its locks in client. A nil opts means
// the defaults. A nil client or a bad option is an error that matches
// ErrInvalid.
func New(client redis.UniversalClient, opts *Options) (*Locker, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalid)
	}
	o, err := opts.init()
	if err != nil {
		return nil, err
	}
	l := &Locker{client: client, opts: o, channel: o.Namespace + ":lock:unlocked"}
	l.n = fanout.New(client, l.channel, &fanout.Options{WakeOne: true, MinBackoff: o.MinBackoff, MaxBackoff: o.MaxBackoff})
	l.channelArg = l.channel
	l.markArg = markSlack(o.MaxBackoff).Milliseconds()
	return l, nil
}

// markSlack is how long a waiter's mark lasts past the holder's ttl. The
// waiter sleeps at most the holder's ttl plus one MaxBackoff; the second
// MaxBackoff covers the reply's trip and a late timer, so that a release
// while the waiter still sleeps finds the mark and is announced.
func markSlack(maxBackoff time.Duration) time.Duration {
	return 2*maxBackoff + time.Millisecond
}

// lockKeys are the Redis names of one lock.
type lockKeys struct {
	lock  string // ns:lock:{name}
	fence string // ns:lock:{name}:fence
	wait  string // ns:lock:{name}:wait, the waiters' mark (obtain.lua)
	msg   string // the escaped name: the unlock message, the waiters' index
}

func makeKeys(ns, name string) (lockKeys, error) {
	esc, err := keys.Escape(name)
	if err != nil {
		return lockKeys{}, fmt.Errorf("%w: name: %w", ErrInvalid, err)
	}
	// One allocation holds the three keys: "L:fenceL:wait", L the lock key.
	var b strings.Builder
	n := len(ns) + len(":lock:{") + len(esc) + len("}")
	b.Grow(2*n + len(":fence:wait"))
	for _, part := range [...]string{ns, ":lock:{", esc, "}:fence", ns, ":lock:{", esc, "}:wait"} {
		b.WriteString(part)
	}
	all := b.String()
	return lockKeys{lock: all[:n], fence: all[:n+len(":fence")], wait: all[n+len(":fence"):], msg: esc}, nil
}

// prepare checks a call's arguments and the Locker's state, and returns
// the acquisition to try, with a new token.
func (l *Locker) prepare(ctx context.Context, name string, ttl time.Duration) (*single, error) {
	k, err := makeKeys(l.opts.Namespace, name)
	if err != nil {
		return nil, err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	select {
	case <-l.n.Closed():
		return nil, ErrClosed
	default:
	}
	if err := ctx.Err(); err != nil {
		l.stats.notObtained.Add(1)
		return nil, fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	return newSingle(l, name, k, ttl), nil
}

// TryObtain takes the lock if it is free, in one round trip, and returns
// ErrNotObtained if it is held.
func (l *Locker) TryObtain(ctx context.Context, name string, ttl time.Duration) (*Lock, error) {
	s, err := l.prepare(ctx, name, ttl)
	if err != nil {
		return nil, err
	}
	ok, v, err := s.attempt(ctx, false)
	if err != nil {
		return nil, l.failed(ctx, name, err)
	}
	if !ok {
		l.stats.notObtained.Add(1)
		return nil, fmt.Errorf("%w: %q is held", ErrNotObtained, name)
	}
	return l.obtained(s, v), nil
}

// Obtain takes the lock, waiting while it is held until it is obtained,
// ctx ends, or the wait bound of opts passes (by default the ttl). A wait
// ends early on the release's notification, through the Locker's shared
// subscription, or on a retry timer that catches a lost notification or a
// holder that expired without releasing. Giving up returns an error that
// matches ErrNotObtained (and ctx's error when ctx ended); a Redis failure
// returns that failure.
func (l *Locker) Obtain(ctx context.Context, name string, ttl time.Duration, opts *ObtainOptions) (*Lock, error) {
	s, err := l.prepare(ctx, name, ttl)
	if err != nil {
		return nil, err
	}
	// The fast path: a free lock costs one round trip and no subscription.
	ok, v, err := s.attempt(ctx, false)
	if err != nil {
		return nil, l.failed(ctx, name, err)
	}
	if !ok {
		if v, err = l.wait(ctx, s, opts.waitBound(ttl)); err != nil {
			return nil, err
		}
	}
	return l.obtained(s, v), nil
}

func (l *Locker) obtained(s *single, fence int64) *Lock {
	l.stats.obtained.Add(1)
	s.lk.fence = fence
	return &s.lk
}

// failed turns an error of a round trip into Obtain's error.
func (l *Locker) failed(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		l.stats.notObtained.Add(1)
		return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
	}
	l.stats.errors.Add(1)
	return fmt.Errorf("lock: obtain %q: %w", name, err)
}

// Listen starts the Locker's shared subscription, if it does not run yet,
// and waits until it is live or ctx ends. Obtain starts it by itself the
// first time it has to wait; Listen lets a service pay for it at startup.
func (l *Locker) Listen(ctx context.Context) error {
	live, err := l.n.Listen()
	if err != nil {
		return ErrClosed
	}
	select {
	case <-live:
		return nil
	case <-l.n.Closed():
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("lock: subscribe to %s: %w", l.channel, ctx.Err())
	}
}

// Close stops the shared subscription and waits for its goroutine. Waiting
// Obtain calls return ErrClosed, as do later Obtain and TryObtain calls.
// Locks already obtained can still be refreshed and released. Close does
// not close the Redis client. It is safe to call more than once.
func (l *Locker) Close() error {
	l.n.Close()
	return nil
}

// Stats returns the Locker's counters.
func (l *Locker) Stats() Stats {
	s := l.stats.snapshot()
	s.Subscriptions, s.Notifications = l.n.Stats()
	return s
}

// single is one acquisition of a Locker's lock: the Lock it becomes once
// obtained, and its holder. One allocation holds both, with the scripts'
// keys and arguments ready, so that an Obtain and a Release allocate
// little beyond what go-redis needs.
type single struct {
	lk    Lock // its h is this single
	l     *Locker
	msg   string    // the escaped name: the unlock message, the waiters' index
	keys  [3]string // obtain.lua's KEYS: lock, fence, and the mark when waiting
	rkeys [2]string // release.lua's KEYS: lock, mark
	oargs [3]any    // obtain.lua's ARGV: token, ttl in ms, the mark's slack
	rargs [3]any    // release.lua's ARGV: token, channel, message
}

func newSingle(l *Locker, name string, k lockKeys, ttl time.Duration) *single {
	tok := token.New()
	s := &single{
		l:     l,
		msg:   k.msg,
		keys:  [3]string{k.lock, k.fence, k.wait},
		rkeys: [2]string{k.lock, k.wait},
	}
	var tokenArg any = tok
	s.oargs = [3]any{tokenArg, ttl.Milliseconds(), l.markArg}
	s.rargs = [3]any{tokenArg, l.channelArg, k.msg}
	s.lk.init(name, tok, 0, ttl, s)
	return s
}

// attempt runs obtain.lua once: ok with the fence, or not ok with the
// holder's remaining ttl in milliseconds. A waiting attempt also marks the
// lock, so that its release is announced.
func (s *single) attempt(ctx context.Context, waiting bool) (bool, int64, error) {
	keys, args := s.keys[:2], s.oargs[:2]
	if waiting {
		keys, args = s.keys[:], s.oargs[:]
	}
	res, err := obtainScript.Run(ctx, s.l.client, keys, args...).Slice()
	if err != nil {
		return false, 0, err
	}
	if len(res) == 2 {
		ok, okInt := res[0].(int64)
		v, vInt := res[1].(int64)
		if okInt && vInt {
			return ok == 1, v, nil
		}
	}
	return false, 0, fmt.Errorf("unexpected reply %v from obtain script", res)
}

// release ignores its token argument: it is s's own, boxed in rargs.
func (s *single) release(ctx context.Context, _ string) (bool, error) {
	n, err := releaseScript.Run(ctx, s.l.client, s.rkeys[:], s.rargs[:]...).Int64()
	return n == 1, err
}

func (s *single) refresh(ctx context.Context, token string, ttl time.Duration) (bool, error) {
	n, err := refreshScript.Run(ctx, s.l.client, s.keys[:1], token, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (s *single) pttl(ctx context.Context, token string) (time.Duration, bool, error) {
	n, err := pttlScript.Run(ctx, s.l.client, s.keys[:1], token).Int64()
	if err != nil || n == -3 {
		return 0, false, err
	}
	if n < 0 {
		return time.Duration(n), true, nil
	}
	return time.Duration(n) * time.Millisecond, true, nil
}
