package fanout

import "sync"

// Waiter is one local caller waiting for messages about one or more keys.
// C holds at most one wake-up: a waiter that is busy when a message comes
// finds the wake-up when it next waits.
type Waiter struct {
	// C receives a wake-up after a message for one of the waiter's keys,
	// and after the subscription came back from a loss.
	C <-chan struct{}

	c    chan struct{}
	keys []string

	mu   sync.Mutex
	seen map[string]string // guarded by mu; each key's last payload since Reset
}

func newWaiter(keys []string) *Waiter {
	c := make(chan struct{}, 1)
	return &Waiter{C: c, c: c, keys: keys}
}

// Payload returns the last payload received for key since the last Reset,
// and whether there was one. After a subscription loss every key reads as
// seen with an empty payload: something may have been sent and missed.
func (w *Waiter) Payload(key string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.seen[key]
	return p, ok
}

// SeenAll reports whether every one of keys had a message (or a loss)
// since the last Reset.
func (w *Waiter) SeenAll(keys []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if _, ok := w.seen[k]; !ok {
			return false
		}
	}
	return true
}

// Reset forgets the payloads so far: the caller is about to re-check, so
// only what comes from now on is news.
func (w *Waiter) Reset() {
	w.mu.Lock()
	clear(w.seen)
	w.mu.Unlock()
}

// note records payload for key.
func (w *Waiter) note(key, payload string) {
	w.mu.Lock()
	if w.seen == nil {
		w.seen = make(map[string]string, len(w.keys))
	}
	w.seen[key] = payload
	w.mu.Unlock()
}

// signal leaves a wake-up in C and reports whether there was room: false
// means one was already pending.
func (w *Waiter) signal() bool {
	select {
	case w.c <- struct{}{}:
		return true
	default:
		return false
	}
}

// pending takes the wake-up left in C, if any, and reports whether there
// was one.
func (w *Waiter) pending() bool {
	select {
	case <-w.c:
		return true
	default:
		return false
	}
}
