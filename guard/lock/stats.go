package lock

import "sync/atomic"

// Stats counts what a Locker or a Redlock did since it was created.
// Wake-ups are counted per waiting Obtain call, each time it stops waiting
// to try again.
type Stats struct {
	// Obtained counts locks obtained, by Obtain and TryObtain.
	Obtained uint64
	// NotObtained counts Obtain and TryObtain calls that gave up because
	// the lock was held: after the wait bound, the context's end, or at
	// once for TryObtain. Calls that failed with an error from Redis are
	// not counted here but in Errors.
	NotObtained uint64
	// Errors counts Obtain and TryObtain calls that failed because Redis
	// (or, for a Redlock, too many nodes) did not answer.
	Errors uint64
	// Waits counts Obtain calls that found the lock held and waited.
	Waits uint64
	// WakeupsNotified counts wake-ups by an unlock notification.
	WakeupsNotified uint64
	// WakeupsTimer counts wake-ups by the retry timer: the fallback for a
	// lost notification, a holder that expired without releasing, or a
	// subscription that is not live. A Redlock always wakes by timer.
	WakeupsTimer uint64
	// Notifications counts unlock messages the shared subscription
	// received, for any lock of the namespace.
	Notifications uint64
	// Subscriptions counts confirmations of the shared subscription: 1
	// after it started, one more after each reconnection.
	Subscriptions uint64
}

// counters hold Stats as atomics.
type counters struct {
	obtained, notObtained, errors, waits atomic.Uint64
	wakeNotified, wakeTimer              atomic.Uint64
	// sleeps counts failed tries after which a waiter went to sleep; tests
	// use it to act only once a waiter is really waiting.
	sleeps atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Obtained:        c.obtained.Load(),
		NotObtained:     c.notObtained.Load(),
		Errors:          c.errors.Load(),
		Waits:           c.waits.Load(),
		WakeupsNotified: c.wakeNotified.Load(),
		WakeupsTimer:    c.wakeTimer.Load(),
	}
}
