package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/keys"
)

// Locker obtains locks on one Redis deployment: a standalone server, a
// Sentinel-managed primary, or a Cluster. It is safe for concurrent use;
// create one per process and share it, so that all its waiters share one
// subscription. Close it when done.
type Locker struct {
	client  redis.UniversalClient
	opts    Options
	err     error  // a bad client or option, returned by every call
	channel string // the namespace's unlock channel
	n       *notifier
	stats   counters
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
// the defaults. A bad option or a nil client is reported by every call.
func New(client redis.UniversalClient, opts *Options) *Locker {
	o, err := opts.init()
	if err == nil && client == nil {
		err = fmt.Errorf("%w: nil redis client", ErrInvalid)
	}
	l := &Locker{client: client, opts: o, err: err, channel: o.Namespace + ":lock:unlocked"}
	l.n = newNotifier(client, l.channel, &l.stats, o.MinBackoff, o.MaxBackoff)
	return l
}

// lockKeys are the Redis names of one lock.
type lockKeys struct {
	lock  string // ns:lock:{name}
	fence string // ns:lock:{name}:fence
	msg   string // the escaped name: the unlock message, the waiters' index
}

func makeKeys(ns, name string) (lockKeys, error) {
	esc, err := keys.Escape(name)
	if err != nil {
		return lockKeys{}, fmt.Errorf("%w: name: %w", ErrInvalid, err)
	}
	lock := ns + ":lock:{" + esc + "}"
	return lockKeys{lock: lock, fence: lock + ":fence", msg: esc}, nil
}

// prepare checks a call's arguments and the Locker's state.
func (l *Locker) prepare(ctx context.Context, name string, ttl time.Duration) (lockKeys, error) {
	if l.err != nil {
		return lockKeys{}, l.err
	}
	k, err := makeKeys(l.opts.Namespace, name)
	if err != nil {
		return k, err
	}
	if err := checkTTL(ttl); err != nil {
		return k, err
	}
	if l.n.isClosed() {
		return k, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		l.stats.notObtained.Add(1)
		return k, fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	return k, nil
}

// TryObtain takes the lock if it is free, in one round trip, and returns
// ErrNotObtained if it is held.
func (l *Locker) TryObtain(ctx context.Context, name string, ttl time.Duration) (*Lock, error) {
	k, err := l.prepare(ctx, name, ttl)
	if err != nil {
		return nil, err
	}
	token := newToken()
	ok, v, err := l.attempt(ctx, k, token, ttl)
	if err != nil {
		return nil, l.failed(ctx, name, err)
	}
	if !ok {
		l.stats.notObtained.Add(1)
		return nil, fmt.Errorf("%w: %q is held", ErrNotObtained, name)
	}
	return l.obtained(name, token, v, ttl, k), nil
}

// Obtain takes the lock, waiting while it is held until it is obtained,
// ctx ends, or the wait bound of opts passes (by default the ttl). A wait
// ends early on the release's notification, through the Locker's shared
// subscription, or on a retry timer that catches a lost notification or a
// holder that expired without releasing. Giving up returns an error that
// matches ErrNotObtained (and ctx's error when ctx ended); a Redis failure
// returns that failure.
func (l *Locker) Obtain(ctx context.Context, name string, ttl time.Duration, opts *ObtainOptions) (*Lock, error) {
	k, err := l.prepare(ctx, name, ttl)
	if err != nil {
		return nil, err
	}
	token := newToken()
	// The fast path: a free lock costs one round trip and no subscription.
	ok, v, err := l.attempt(ctx, k, token, ttl)
	if err != nil {
		return nil, l.failed(ctx, name, err)
	}
	if !ok {
		if v, err = l.wait(ctx, name, k, token, ttl, opts.waitBound(ttl)); err != nil {
			return nil, err
		}
	}
	return l.obtained(name, token, v, ttl, k), nil
}

// attempt runs obtain.lua once: ok with the fence, or not ok with the
// holder's remaining ttl in milliseconds.
func (l *Locker) attempt(ctx context.Context, k lockKeys, token string, ttl time.Duration) (bool, int64, error) {
	res, err := obtainScript.Run(ctx, l.client, []string{k.lock, k.fence}, token, ttl.Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("unexpected reply %v from obtain script", res)
	}
	return res[0] == 1, res[1], nil
}

func (l *Locker) obtained(name, token string, fence int64, ttl time.Duration, k lockKeys) *Lock {
	l.stats.obtained.Add(1)
	return newLock(name, token, fence, ttl, &single{l: l, k: k})
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
	if l.err != nil {
		return l.err
	}
	live, err := l.n.listen()
	if err != nil {
		return err
	}
	select {
	case <-live:
		return nil
	case <-l.n.stop:
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
	l.n.close()
	return nil
}

// Stats returns the Locker's counters.
func (l *Locker) Stats() Stats { return l.stats.snapshot() }

// single is the holder of a Locker's lock.
type single struct {
	l *Locker
	k lockKeys
}

func (s *single) release(ctx context.Context, token string) (bool, error) {
	n, err := releaseScript.Run(ctx, s.l.client, []string{s.k.lock}, token, s.l.channel, s.k.msg).Int64()
	return n == 1, err
}

func (s *single) refresh(ctx context.Context, token string, ttl time.Duration) (bool, error) {
	n, err := refreshScript.Run(ctx, s.l.client, []string{s.k.lock}, token, ttl.Milliseconds()).Int64()
	return n == 1, err
}

func (s *single) pttl(ctx context.Context, token string) (time.Duration, bool, error) {
	n, err := pttlScript.Run(ctx, s.l.client, []string{s.k.lock}, token).Int64()
	if err != nil || n == -3 {
		return 0, false, err
	}
	if n < 0 {
		return time.Duration(n), true, nil
	}
	return time.Duration(n) * time.Millisecond, true, nil
}
