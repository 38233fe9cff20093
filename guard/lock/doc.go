// Package lock is a distributed lock on Redis, with fencing, refresh, a
// watchdog, pub/sub wake-up of waiters, and a Redlock quorum over
// independent Redis nodes.
//
// A Locker (New) keeps its locks in one Redis deployment: standalone,
// Sentinel or Cluster. A Redlock (NewRedlock) keeps each lock on N
// independent nodes and holds it while N/2+1 of them grant it. Both return
// the same *Lock and satisfy Obtainer.
//
// # Keys
//
// Lock name is escaped (internal/keys) and stored as
//
//	ns:lock:{name}          the holder's token, with the lock's ttl
//	ns:lock:{name}:fence    the fencing counter, no expiry
//	ns:lock:{name}:wait     the waiters' mark, while someone waits
//
// The braces are the Cluster hash tag: the keys sit in one slot, so one
// script touches them all. Releases are announced on the channel
// ns:lock:unlocked with the escaped name as the message.
//
// # Acquisition
//
// Each acquisition gets a token of 128 random bits and a fence: the lock's
// counter, incremented by the same script that sets the lock, so fences
// increase with every acquisition of a name. Pass the fence along with
// writes that the lock protects and reject, at the database, a fence lower
// than one already seen: a holder paused past its ttl (GC, swap, network)
// is then harmless. Release, Refresh and TTL are each one compare-and-act
// script on the token.
//
// # Waiting
//
// Obtain first tries once. When the lock is held, the caller becomes a
// waiter of the Locker's one shared subscription (started at the first
// wait, stopped by Close), which wakes one local waiter of a lock per
// release announcement. A waiter also sleeps on a timer: the holder's
// remaining ttl plus one backoff while the subscription is live (a lost
// announcement, or a holder that crashed, costs at most that), one backoff
// while it is not. When the subscription comes back after an outage, every
// waiter looks again at once: releases during the gap were not heard. The
// subscription is internal/fanout's, shared with cacheaside's waiters. Stats counts both kinds of
// wake-up.
//
// A release publishes only when someone waits: each failed try of a
// waiter sets the lock's mark, in the same script, to last the holder's
// remaining ttl plus two MaxBackoff, longer than the waiter sleeps; a
// release publishes while the mark exists and leaves it to expire, for
// other waiters. An uncontended Obtain and Release thus cost one script
// round trip each, no PUBLISH (which on a Cluster reaches every node),
// and no subscription.
//
// # Operations
//
// Locks and fence counters must not be evicted: run the Redis that holds
// them with a volatile-* maxmemory-policy (fence keys have no expiry and
// are never chosen; lock keys have one and could be) or noeviction, or on
// a Redis of their own. An evicted lock key lets a second holder in; an
// evicted fence counter restarts at 1, and the database then rejects the
// new holders' fences until they pass the old high-water mark. An evicted
// mark only costs its waiters a wake-up by timer.
//
// Redis replication is asynchronous: after a failover the new primary may
// miss a lock that was just granted, and grant it twice. Fences guard
// against that only if the counter survived; a Redlock over independent
// nodes (with persistence, or restarts delayed by the longest ttl) does not
// depend on one primary.
package lock
