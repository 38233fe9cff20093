package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/asidekit/asidekit/guard/lock"
)

// LockStatser is what NewLockCollector reads: a *lock.Locker or a
// *lock.Redlock.
type LockStatser interface {
	Stats() lock.Stats
}

// NewLockCollector returns a Collector of src's lock.Stats, read at each
// scrape and exported as asidekit_lock_*_total counters with the constant
// label locker=name (see the package doc for the list). Give each Locker
// or Redlock registered on one registry its own name.
//
// A nil src panics here rather than at every scrape: it is a wiring
// mistake, best found when the service starts.
func NewLockCollector(name string, src LockStatser) prometheus.Collector {
	if src == nil {
		panic("metrics: NewLockCollector with a nil source")
	}
	c := newSnapshotCollector("lock", "locker", name, src.Stats)
	desc := c.desc
	c.counter(desc("obtained_total", "Locks obtained, by Obtain and TryObtain."),
		func(s lock.Stats) float64 { return float64(s.Obtained) })
	c.counter(desc("not_obtained_total", "Obtain and TryObtain calls that gave up because the lock was held."),
		func(s lock.Stats) float64 { return float64(s.NotObtained) })
	c.counter(desc("errors_total", "Obtain and TryObtain calls that failed because Redis did not answer."),
		func(s lock.Stats) float64 { return float64(s.Errors) })
	c.counter(desc("waits_total", "Obtain calls that found the lock held and waited."),
		func(s lock.Stats) float64 { return float64(s.Waits) })
	wake := c.counter(desc("wakeups_total", "Wake-ups of waiting Obtain calls, by an unlock notification or by the retry timer.", "by"),
		func(s lock.Stats) float64 { return float64(s.WakeupsNotified) }, "notification")
	c.counter(wake, func(s lock.Stats) float64 { return float64(s.WakeupsTimer) }, "timer")
	c.counter(desc("notifications_total", "Unlock messages received by the shared subscription."),
		func(s lock.Stats) float64 { return float64(s.Notifications) })
	c.counter(desc("subscriptions_total", "Confirmations of the shared subscription: 1 after it started, one more per reconnection."),
		func(s lock.Stats) float64 { return float64(s.Subscriptions) })
	return c
}
