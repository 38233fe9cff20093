package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/backoff"
	"github.com/asidekit/asidekit/internal/token"
)

// Redlock obtains locks on N independent Redis nodes (not replicas of one
// another, not one Cluster) and holds a lock while a quorum of N/2+1 nodes
// grant it: the Redlock algorithm. One node down, of three, costs nothing;
// two down and Obtain fails with ErrNoQuorum.
//
// A lock is granted when the quorum answered within its validity time:
// ttl - elapsed - drift, where drift = ttl·DriftFactor + 2ms allows for the
// nodes' clocks running at different rates. Its fence is the largest of the
// quorum's counters, and the quorum's counters are raised to it before
// Obtain returns, so fences increase across acquisitions as long as the
// nodes keep their data (with persistence, or restarts delayed by the
// longest ttl, as Redlock itself requires).
//
// A Redlock waits by retrying rounds after a jittered backoff: it has no
// shared subscription. It is safe for concurrent use.
type Redlock struct {
	clients []redis.UniversalClient
	opts    RedlockOptions
	quorum  int
	stats   counters
}

// NewRedlock returns a Redlock over clients, one per independent node. A
// nil opts means the defaults. An empty list, a nil client or a bad option
// is an error that matches ErrInvalid.
func NewRedlock(clients []redis.UniversalClient, opts *RedlockOptions) (*Redlock, error) {
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: redlock needs at least one node", ErrInvalid)
	}
	if i := slices.Index(clients, nil); i >= 0 {
		return nil, fmt.Errorf("%w: redlock: node %d: nil redis client", ErrInvalid, i)
	}
	o, err := opts.init()
	if err != nil {
		return nil, err
	}
	return &Redlock{
		clients: slices.Clone(clients),
		opts:    o,
		quorum:  len(clients)/2 + 1,
	}, nil
}

// Stats returns the Redlock's counters.
func (r *Redlock) Stats() Stats { return r.stats.snapshot() }

// errHeld means that a round found the lock held: worth another round.
var errHeld = errors.New("held")

// TryObtain runs one round and returns ErrNotObtained if the lock is held,
// or an error matching ErrNoQuorum if too many nodes failed.
func (r *Redlock) TryObtain(ctx context.Context, name string, ttl time.Duration) (*Lock, error) {
	k, err := r.prepare(ctx, name, ttl)
	if err != nil {
		return nil, err
	}
	tok := token.New()
	fence, err := r.round(ctx, k, tok, ttl)
	if err != nil {
		return nil, r.failed(ctx, name, err)
	}
	return r.obtained(name, tok, fence, ttl, k), nil
}

// Obtain runs rounds until the lock is obtained, ctx ends or the wait
// bound of opts passes (by default the ttl), sleeping a jittered backoff
// between rounds. It fails at once, with an error matching ErrNoQuorum,
// when so many nodes failed that no quorum was possible.
func (r *Redlock) Obtain(ctx context.Context, name string, ttl time.Duration, opts *ObtainOptions) (*Lock, error) {
	k, err := r.prepare(ctx, name, ttl)
	if err != nil {
		return nil, err
	}
	tok := token.New()
	var boundC <-chan time.Time
	if bound := opts.waitBound(ttl); bound > 0 {
		bt := time.NewTimer(bound)
		defer bt.Stop()
		boundC = bt.C
	}
	retry := backoff.New(r.opts.MinBackoff, r.opts.MaxBackoff)
	var timer *time.Timer
	for waited := false; ; waited = true {
		fence, err := r.round(ctx, k, tok, ttl)
		if err == nil {
			return r.obtained(name, tok, fence, ttl, k), nil
		}
		if !errors.Is(err, errHeld) {
			return nil, r.failed(ctx, name, err)
		}
		if !waited {
			r.stats.waits.Add(1)
			timer = time.NewTimer(retry.Next())
			defer timer.Stop()
		} else {
			timer.Reset(retry.Next())
		}
		select {
		case <-timer.C:
			r.stats.wakeTimer.Add(1)
		case <-ctx.Done():
			return nil, r.failed(ctx, name, ctx.Err())
		case <-boundC:
			r.stats.notObtained.Add(1)
			return nil, fmt.Errorf("%w: %q still held after %v", ErrNotObtained, name, opts.waitBound(ttl))
		}
	}
}

func (r *Redlock) prepare(ctx context.Context, name string, ttl time.Duration) (lockKeys, error) {
	k, err := makeKeys(r.opts.Namespace, name)
	if err != nil {
		return k, err
	}
	if err := r.checkTTL(ttl); err != nil {
		return k, err
	}
	if err := ctx.Err(); err != nil {
		r.stats.notObtained.Add(1)
		return k, fmt.Errorf("%w: %w", ErrNotObtained, err)
	}
	return k, nil
}

func (r *Redlock) failed(ctx context.Context, name string, err error) error {
	switch {
	case errors.Is(err, errHeld):
		r.stats.notObtained.Add(1)
		return fmt.Errorf("%w: %q is held", ErrNotObtained, name)
	case ctx.Err() != nil:
		r.stats.notObtained.Add(1)
		return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
	}
	r.stats.errors.Add(1)
	return fmt.Errorf("lock: redlock obtain %q: %w", name, err)
}

func (r *Redlock) obtained(name, token string, fence int64, ttl time.Duration, k lockKeys) *Lock {
	r.stats.obtained.Add(1)
	return newLock(name, token, fence, ttl, &quorumHolder{r: r, k: k, ttl: ttl})
}

// checkTTL rejects a ttl that could never be valid: one the drift
// allowance uses up would make every round fail as if the lock were held.
func (r *Redlock) checkTTL(ttl time.Duration) error {
	if err := checkTTL(ttl); err != nil {
		return err
	}
	if d := r.drift(ttl); ttl <= d {
		return fmt.Errorf("%w: ttl %v is not above the clock drift allowance %v", ErrInvalid, ttl, d)
	}
	return nil
}

// drift is the clock drift allowed for a lock of ttl.
func (r *Redlock) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*r.opts.DriftFactor) + 2*time.Millisecond
}

func (r *Redlock) nodeTimeout(ttl time.Duration) time.Duration {
	if r.opts.NodeTimeout > 0 {
		return r.opts.NodeTimeout
	}
	return max(ttl/10, minNodeTimeout)
}

// nodeReply is one node's answer in a round.
type nodeReply struct {
	v   []int64 // obtain.lua's reply, or nil
	n   int64   // the other scripts' reply
	err error
}

// each runs fn on every node at once, each bounded by the node timeout,
// and returns the replies in node order.
func (r *Redlock) each(ctx context.Context, ttl time.Duration, fn func(ctx context.Context, c redis.UniversalClient) nodeReply) []nodeReply {
	out := make([]nodeReply, len(r.clients))
	timeout := r.nodeTimeout(ttl)
	var wg sync.WaitGroup
	for i, c := range r.clients {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			out[i] = fn(nctx, c)
			if out[i].err != nil {
				out[i].err = fmt.Errorf("node %d: %w", i, out[i].err)
			}
		})
	}
	wg.Wait()
	return out
}

// round tries every node once. It returns the fence when a quorum granted
// the lock within its validity time; errHeld when the lock is held but a
// quorum could still be reached; else an error matching ErrNoQuorum. A
// failed round releases what it got.
func (r *Redlock) round(ctx context.Context, k lockKeys, token string, ttl time.Duration) (int64, error) {
	start := time.Now()
	replies := r.each(ctx, ttl, func(ctx context.Context, c redis.UniversalClient) nodeReply {
		v, err := obtainScript.Run(ctx, c, []string{k.lock, k.fence}, token, ttl.Milliseconds()).Int64Slice()
		if err == nil && len(v) != 2 {
			err = fmt.Errorf("unexpected reply %v from obtain script", v)
		}
		return nodeReply{v: v, err: err}
	})
	var granted []int
	var fence int64
	var errs []error
	for i, rp := range replies {
		switch {
		case rp.err != nil:
			errs = append(errs, rp.err)
		case rp.v[0] == 1:
			granted = append(granted, i)
			fence = max(fence, rp.v[1])
		}
	}
	valid := ttl - time.Since(start) - r.drift(ttl)
	if len(granted) >= r.quorum && valid > 0 {
		if err := r.raiseFences(ctx, k, token, ttl, fence, granted, replies); err == nil {
			if ttl-time.Since(start)-r.drift(ttl) > 0 {
				return fence, nil
			}
		} else {
			errs = append(errs, err)
		}
	}
	// Not granted: undo, on every node, since a node may have set the key
	// and then failed to answer. The caller's ctx may have ended.
	r.each(context.WithoutCancel(ctx), ttl, func(ctx context.Context, c redis.UniversalClient) nodeReply {
		return nodeReply{err: releaseScript.Run(ctx, c, []string{k.lock, k.wait}, token, r.opts.Namespace+":lock:unlocked", k.msg).Err()}
	})
	if len(errs) > len(r.clients)-r.quorum {
		return 0, fmt.Errorf("%w: %d of %d nodes granted the lock, %d needed: %w",
			ErrNoQuorum, len(granted), len(r.clients), r.quorum, errors.Join(errs...))
	}
	return 0, errHeld
}

// raiseFences brings the counters of the granted nodes up to fence, so that
// at least a quorum of nodes hold a counter no lower than it.
func (r *Redlock) raiseFences(ctx context.Context, k lockKeys, token string, ttl time.Duration, fence int64, granted []int, replies []nodeReply) error {
	high := 0
	var low []int
	for _, i := range granted {
		if replies[i].v[1] == fence {
			high++
		} else {
			low = append(low, i)
		}
	}
	if high >= r.quorum {
		return nil
	}
	out := make([]error, len(low))
	var wg sync.WaitGroup
	for j, i := range low {
		wg.Go(func() {
			nctx, cancel := context.WithTimeout(ctx, r.nodeTimeout(ttl))
			defer cancel()
			n, err := fenceScript.Run(nctx, r.clients[i], []string{k.lock, k.fence}, token, fence).Int64()
			if err == nil && n < fence {
				err = errors.New("lock no longer held")
			}
			if err != nil {
				out[j] = fmt.Errorf("node %d: raise fence: %w", i, err)
			}
		})
	}
	wg.Wait()
	for _, err := range out {
		if err == nil {
			high++
		}
	}
	if high >= r.quorum {
		return nil
	}
	return errors.Join(out...)
}

// quorumHolder is the holder of a Redlock's lock.
type quorumHolder struct {
	r   *Redlock
	k   lockKeys
	ttl time.Duration // the ttl of Obtain: sizes node timeouts and drift
}

// tally counts the nodes that answered n == 1 and the nodes that failed.
func tally(replies []nodeReply) (ok int, errs []error) {
	for _, rp := range replies {
		switch {
		case rp.err != nil:
			errs = append(errs, rp.err)
		case rp.n == 1:
			ok++
		}
	}
	return ok, errs
}

// verdict turns a count of nodes into held or not: held with a quorum;
// not held when even the failed nodes could not have made one; else the
// failures.
func (q *quorumHolder) verdict(ok int, errs []error) (bool, error) {
	if ok >= q.r.quorum {
		return true, nil
	}
	if ok+len(errs) >= q.r.quorum {
		return false, errors.Join(errs...)
	}
	return false, nil
}

func (q *quorumHolder) release(ctx context.Context, token string) (bool, error) {
	replies := q.r.each(ctx, q.ttl, func(ctx context.Context, c redis.UniversalClient) nodeReply {
		n, err := releaseScript.Run(ctx, c, []string{q.k.lock, q.k.wait}, token, q.r.opts.Namespace+":lock:unlocked", q.k.msg).Int64()
		return nodeReply{n: n, err: err}
	})
	return q.verdict(tally(replies))
}

func (q *quorumHolder) refresh(ctx context.Context, token string, ttl time.Duration) (bool, error) {
	// Checked before any node is touched: a ttl the drift uses up would
	// shorten the lock on every node and then report it lost.
	if err := q.r.checkTTL(ttl); err != nil {
		return false, err
	}
	start := time.Now()
	replies := q.r.each(ctx, ttl, func(ctx context.Context, c redis.UniversalClient) nodeReply {
		n, err := refreshScript.Run(ctx, c, []string{q.k.lock}, token, ttl.Milliseconds()).Int64()
		return nodeReply{n: n, err: err}
	})
	held, err := q.verdict(tally(replies))
	if held && ttl-time.Since(start)-q.r.drift(ttl) <= 0 {
		return false, nil
	}
	return held, err
}

func (q *quorumHolder) pttl(ctx context.Context, token string) (time.Duration, bool, error) {
	replies := q.r.each(ctx, q.ttl, func(ctx context.Context, c redis.UniversalClient) nodeReply {
		n, err := pttlScript.Run(ctx, c, []string{q.k.lock}, token).Int64()
		return nodeReply{n: n, err: err}
	})
	var ds []time.Duration
	var errs []error
	for _, rp := range replies {
		switch {
		case rp.err != nil:
			errs = append(errs, rp.err)
		case rp.n >= 0:
			ds = append(ds, time.Duration(rp.n)*time.Millisecond)
		case rp.n == -1:
			ds = append(ds, time.Duration(1<<62)) // no expiry
		}
	}
	if len(ds) < q.r.quorum {
		_, err := q.verdict(len(ds), errs)
		return 0, false, err
	}
	// The lock lasts while a quorum holds it: until the quorum-th longest
	// of the nodes' ttls runs out, less the drift.
	slices.Sort(ds)
	slices.Reverse(ds)
	d := ds[q.r.quorum-1]
	if d == time.Duration(1<<62) {
		return -1, true, nil
	}
	d -= q.r.drift(q.ttl)
	if d <= 0 {
		return 0, false, nil
	}
	return d, true, nil
}
