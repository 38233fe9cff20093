package fanout

import (
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/internal/backoff"
)

// run is the subscription's goroutine: it receives, reconnects, and
// dispatches, until Close.
func (h *Hub) run(ps *redis.PubSub) {
	defer close(h.done)
	ctx := h.ctx
	// A failed SUBSCRIBE is retried by the PubSub itself: it remembers the
	// channel and subscribes again on each new connection.
	_ = ps.Subscribe(ctx, h.channel)
	retry := backoff.New(h.opts.MinBackoff, h.opts.MaxBackoff)
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, h.opts.HealthInterval)
		select {
		case <-h.stop:
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
			// subscribes again), or silent after a ping (it is replaced).
			// Until the subscription is confirmed again, waiters fall
			// back to their timers.
			h.setLive(false)
			if pinged {
				if ps = h.renew(ps); ps == nil {
					return
				}
			}
			pinged = false
			select {
			case <-h.stop:
				return
			case <-time.After(retry.Next()):
			}
			continue
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				retry.Reset()
				h.confirmed()
			}
		case *redis.Message:
			key := h.opts.Key(m.Payload)
			h.mu.Lock()
			h.wakeLocked(key, m.Payload)
			h.mu.Unlock()
			h.messages.Add(1) // counted once delivered
		}
	}
}

// confirmed records a subscription confirmation. After the first, it
// wakes every waiter: what was sent during the gap was not heard.
func (h *Hub) confirmed() {
	again := h.subscribes.Add(1) > 1
	h.setLive(true)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.down = false
	if again {
		h.wakeAllLocked()
	}
}

// renew closes ps and replaces it with a new PubSub on the same channel,
// or returns nil when the Hub is closed.
func (h *Hub) renew(ps *redis.PubSub) *redis.PubSub {
	_ = ps.Close()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	ps = h.client.Subscribe(h.ctx)
	h.ps = ps
	h.mu.Unlock()
	// If Close runs now, it closes the new PubSub, and run sees stop.
	_ = ps.Subscribe(h.ctx, h.channel)
	return ps
}
