package lock

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// healthInterval is how long the subscription may stay silent before it
// pings the server; a second silent interval counts as a lost connection.
const healthInterval = 15 * time.Second

// notifier is a Locker's one shared subscription to the namespace's unlock
// channel. It dispatches each message (an escaped lock name) to the local
// waiters of that lock. It starts at the first waiter and runs until close.
type notifier struct {
	client  redis.UniversalClient
	channel string
	stats   *counters
	lo, hi  time.Duration // reconnect backoff

	mu      sync.Mutex
	waiters map[string][]*waiter // guarded by mu; per lock name, oldest first
	live    chan struct{}        // guarded by mu; closed while subscribed
	ps      *redis.PubSub        // guarded by mu; nil until started
	closed  bool                 // guarded by mu
	stop    chan struct{}        // closed by close
	ctx     context.Context      // the subscription's I/O; cancelled by close
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
}

// waiter is one waiting Obtain call. A notification is a value in ch,
// which holds at most one: a waiter that is busy trying when its lock is
// released finds the notification when it next waits.
type waiter struct {
	ch chan struct{}
}

func newNotifier(client redis.UniversalClient, channel string, stats *counters, lo, hi time.Duration) *notifier {
	ctx, cancel := context.WithCancel(context.Background())
	return &notifier{
		ctx:     ctx,
		cancel:  cancel,
		client:  client,
		channel: channel,
		stats:   stats,
		lo:      lo,
		hi:      hi,
		waiters: make(map[string][]*waiter),
		live:    make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// register adds a waiter for the lock name, starting the subscription if it
// does not run yet, and returns the waiter with a channel that is closed
// once the subscription is live. It fails with ErrClosed after close.
func (n *notifier) register(name string) (*waiter, <-chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, nil, ErrClosed
	}
	n.startLocked()
	w := &waiter{ch: make(chan struct{}, 1)}
	n.waiters[name] = append(n.waiters[name], w)
	return w, n.live, nil
}

// unregister removes w. A waiter that leaves without the lock passes on a
// notification it did not use, so that a release is never lost locally.
func (n *notifier) unregister(name string, w *waiter, passOn bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ws := n.waiters[name]
	if i := slices.Index(ws, w); i >= 0 {
		ws = slices.Delete(ws, i, i+1)
	}
	if len(ws) == 0 {
		delete(n.waiters, name)
	} else {
		n.waiters[name] = ws
	}
	if !passOn {
		return
	}
	select {
	case <-w.ch:
		n.wakeLocked(name)
	default:
	}
}

// wakeLocked notifies the oldest waiter of name that has no notification
// pending. One is enough: only one contender can win the lock, and a
// waiter that loses waits again for the next release.
func (n *notifier) wakeLocked(name string) {
	for _, w := range n.waiters[name] {
		select {
		case w.ch <- struct{}{}:
			return
		default:
		}
	}
}

// wakeAll notifies one waiter of every lock.
func (n *notifier) wakeAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for name := range n.waiters {
		n.wakeLocked(name)
	}
}

// isClosed reports whether close was called. It reads stop, not closed,
// so that Obtain's fast path takes no lock shared by every caller.
func (n *notifier) isClosed() bool {
	select {
	case <-n.stop:
		return true
	default:
		return false
	}
}

// liveNow reports whether the subscription is confirmed at this moment.
func (n *notifier) liveNow() bool {
	n.mu.Lock()
	live := n.live
	n.mu.Unlock()
	select {
	case <-live:
		return true
	default:
		return false
	}
}

// listen starts the subscription and returns the channel closed when it is
// live.
func (n *notifier) listen() (<-chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	n.startLocked()
	return n.live, nil
}

func (n *notifier) startLocked() {
	if n.ps != nil {
		return
	}
	// Subscribe with no channel does no I/O; run subscribes.
	n.ps = n.client.Subscribe(n.ctx)
	go n.run(n.ps)
}

// setLive records whether the subscription is confirmed.
func (n *notifier) setLive(up bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	select {
	case <-n.live:
		if !up {
			n.live = make(chan struct{})
		}
	default:
		if up {
			close(n.live)
		}
	}
}

func (n *notifier) run(ps *redis.PubSub) {
	defer close(n.done)
	ctx := n.ctx
	// A failed SUBSCRIBE is retried by the PubSub itself: it remembers the
	// channel and subscribes again on each new connection.
	_ = ps.Subscribe(ctx, n.channel)
	retry := newBackoff(n.lo, n.hi)
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, healthInterval)
		select {
		case <-n.stop:
			return
		default:
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !pinged {
				pinged = true
				_ = ps.Ping(ctx)
				continue
			}
			// The connection is gone (the next Receive dials again and
			// resubscribes), or silent after a ping (it is replaced).
			// Until the subscription is confirmed again, waiters fall
			// back to their retry timers.
			n.setLive(false)
			if pinged {
				if ps = n.renew(ps); ps == nil {
					return
				}
			}
			pinged = false
			select {
			case <-n.stop:
				return
			case <-time.After(retry.next()):
			}
			continue
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				retry.reset()
				again := n.stats.subscribes.Add(1) > 1
				n.setLive(true)
				if again {
					// Releases during the gap were not heard: let one
					// waiter of each lock look again.
					n.wakeAll()
				}
			}
		case *redis.Message:
			n.stats.messages.Add(1)
			n.mu.Lock()
			n.wakeLocked(m.Payload)
			n.mu.Unlock()
		}
	}
}

// renew closes ps and replaces it with a new PubSub on the same channel,
// or returns nil when the notifier is closed.
func (n *notifier) renew(ps *redis.PubSub) *redis.PubSub {
	_ = ps.Close()
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	ps = n.client.Subscribe(n.ctx)
	n.ps = ps
	n.mu.Unlock()
	// If close runs now, it closes the new PubSub, and run sees stop.
	_ = ps.Subscribe(n.ctx, n.channel)
	return ps
}

// close stops the subscription, waits for its goroutine, and wakes every
// waiter so that it can return ErrClosed.
func (n *notifier) close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.stop)
	n.cancel() // ends a dial in progress
	ps := n.ps
	n.mu.Unlock()
	if ps != nil {
		// Closing the PubSub ends a Receive that blocks in run.
		_ = ps.Close()
		<-n.done
	}
}
