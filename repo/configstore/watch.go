package configstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/backoff"
)

// Watch subscribes to the scope's changes and returns a channel that
// delivers them until ctx ends; then it is closed.
//
// First, and again after every reconnection of the subscription, the
// channel delivers one Change per key in the hash, tombstones included
// (rebuilding the hash if it is missing): changes published while the
// subscription was down are lost, and this snapshot makes up for them.
// Afterwards it delivers each change the writers, rebuilds and Reconcile
// publish. Changes may repeat or arrive out of version order; apply them
// with Local.Apply (or compare Version yourself) and a copy converges.
//
// A slow receiver holds up the stream (not other subscribers); Redis may
// then drop the subscription, which Watch takes as a reconnection.
func (s *Store) Watch(ctx context.Context) (<-chan Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("configstore: watch: %w", context.Cause(ctx))
	}
	ps := s.rdb.Subscribe(ctx, s.channel)
	// The first reply confirms the subscription or carries its error.
	if _, err := ps.Receive(ctx); err != nil {
		_ = ps.Close()
		return nil, fmt.Errorf("configstore: watch %s: %w", s.channel, err)
	}
	out := make(chan Change, s.opts.WatchBuffer)
	go s.watch(ctx, ps, out)
	return out, nil
}

func (s *Store) watch(ctx context.Context, ps *redis.PubSub, out chan<- Change) {
	defer close(out)
	// Receive does not return when ctx is cancelled, only when the
	// connection is closed.
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	defer stop()
	defer ps.Close()

	send := func(cs []Change) bool {
		for _, c := range cs {
			select {
			case out <- c:
			case <-ctx.Done():
				return false
			}
		}
		return true
	}
	if !send(s.snapshotRetry(ctx)) {
		return
	}
	retry := newRetry()
	for {
		msg, err := ps.ReceiveTimeout(ctx, s.watchPing)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
				return
			}
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
				// Quiet channel: a PING checks the connection (a failed
				// one is re-dialled and re-subscribed by go-redis).
				_ = ps.Ping(ctx)
				continue
			}
			if retry.Wait(ctx) != nil {
				return
			}
			continue
		}
		retry.Reset()
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && !send(s.snapshotRetry(ctx)) {
				return
			}
		case *redis.Message:
			cs, err := parseMessage(m.Payload)
			if err != nil {
				continue // not from this package; nothing to deliver
			}
			if !send(cs) {
				return
			}
		}
	}
}

// snapshotRetry returns the hash as changes, retrying until it succeeds or
// ctx ends (then it returns nil).
func (s *Store) snapshotRetry(ctx context.Context) []Change {
	retry := newRetry()
	for {
		cs, err := s.snapshot(ctx)
		if err == nil {
			return cs
		}
		if retry.Wait(ctx) != nil {
			return nil
		}
	}
}

// snapshot returns one Change per entry in the hash, tombstones included.
func (s *Store) snapshot(ctx context.Context) ([]Change, error) {
	for range maxReadAttempts {
		raw, err := s.rdb.HGetAll(ctx, s.hash).Result()
		if err != nil {
			return nil, err
		}
		if _, built := raw[builtField]; !built {
			if err := s.rebuild(ctx); err != nil {
				return nil, err
			}
			continue
		}
		cs := make([]Change, 0, len(raw))
		for k, v := range raw {
			if e, ok := decode(v); ok && !special(k) {
				cs = append(cs, e.change(k))
			}
		}
		return cs, nil
	}
	return nil, fmt.Errorf("configstore: hash %s vanished after being rebuilt", s.hash)
}

// watchPing is how long a quiet subscription waits before it checks its
// connection with a PING.
const watchPing = 30 * time.Second

// newRetry returns the backoff of Watch's retries: 50ms, doubling up to
// 2s, jittered.
func newRetry() backoff.Backoff { return backoff.New(50*time.Millisecond, 2*time.Second) }
