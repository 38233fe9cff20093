// Package cacheaside is asidekit's read-through engine: typed entities
// cached in Redis in front of a loader (usually a database query), guarded
// against the three classic cache failures.
//
//   - Penetration: absent ids are cached as "not found" for NullTTL, and an
//     optional Bloom pre-filter (Policy.Filter) answers ErrNotFound for ids
//     that exist nowhere without calling the loader.
//   - Avalanche: every write's TTL is jittered, and when Redis fails reads
//     fall through to the loader, capped per entity by MaxConcurrentLoads and
//     guarded by a breaker so that a dead Redis costs no per-call timeout.
//   - Breakdown: per entity, a Strategy decides how concurrent misses of one
//     hot key are rebuilt: None, SingleFlight, Mutex (one load across all
//     processes, waiters woken by one shared pub/sub subscription),
//     AsyncRefresh (logical expiry, stale-while-revalidate) or EarlyRefresh
//     (XFetch probabilistic early recomputation).
//
// # Stored entries
//
// A value is one Redis string: a 15-byte header (magic, format version, a
// null flag, the logical expiry in Unix milliseconds and the last load's
// duration) followed by the Codec's payload. A hit costs one GET and one
// decode. A corrupt or foreign entry is a miss: it is deleted and counted.
//
// Concurrent Gets of one key in a process share GETs by group commit: a
// Get that finds no GET of the key in flight sends its own at once; one
// that finds a GET in flight never joins it (it may have been read before
// the Get began) but queues for the next one, sent when the one in flight
// returns. A lone reader pays nothing, a hot key costs about one GET per
// round trip, each Get decodes its own value, and no Get returns a value
// older than a write completed before it began.
//
// # Connection pools
//
// A process reading hot keys needs few connections (GETs of one key are
// shared), but its first burst of misses, lease and store scripts may open
// many at once, each costing a dial and a handshake on the critical path.
// Give the go-redis client a MinIdleConns of about the number of distinct
// keys you expect to be read or rebuilt at once (8 to 16 is a good start)
// and a PoolSize above it (go-redis defaults to 10 per CPU), so that the
// pool is warm before the first burst.
//
// # Near cache
//
// Policy.Local adds an in-process tier (github.com/maypok86/otter/v2,
// W-TinyLFU) in front of Redis: a hit there costs no round trip and no
// decode. Redis itself invalidates it (Options.LocalInvalidation): by
// default the Cache keeps, per node (per master on a Cluster), one
// connection with CLIENT TRACKING ON REDIRECT <itself> BCAST PREFIX
// "<namespace>:{" subscribed to __redis__:invalidate, so every change of an
// entry, whoever made it, drops it from every process. The tier fills only
// while those connections are confirmed; when one drops (or Redis is
// flushed) every tier of the Cache is emptied before it serves again. A
// read that began before a reported change never fills the tier (a ticket
// per key stripe, checked under the stripe's lock). A local entry lives at
// most Local.TTL and never past its Redis entry's logical expiry; Set and
// Invalidate drop the writer's own copies before they return. Across
// processes the freshness bound is the invalidation's propagation delay
// (see the local_invalidation benchmark).
//
// Options.HotKeys (off by default) gives every entity with no Policy.Local
// the same tier for its hot keys alone: its reads are estimated in a
// count-min sketch (halved as it ages; every read from Redis counted, one
// local hit in HotKeyPolicy.Sample), a read from Redis keeps its value
// locally only once the key's estimate reaches MinReads (a promotion),
// and a key is demoted when its estimate falls under half of that, when
// its local life ends or when the entity's memory Budget needs its room. The gate, the tickets, the flushes and the writer's
// drop are those of Policy.Local. It is off by default because it relaxes
// the cross-process promise of every entity to the propagation delay above.
//
// # Keys
//
// For entity "user" and id "42" in namespace "ak":
//
//	ak:{user:42}       the entry
//	ak:{user:42}:lock  the rebuild lease (Mutex, AsyncRefresh, EarlyRefresh)
//	ak:{user:42}:ver   the version token
//
// All three share the hash tag {user:42}, so every script runs on Redis
// Cluster. Entity names and ids are escaped with internal/keys.
//
// # List generations
//
// ListGenerations holds the generation keys of a cached query's lists
// (package repo's Query caches pages of ids under them): one key per list,
// named as an entity's entries are ("ak:{items.gen.by_grp:<list>}"). Read
// gives a reader the current generations (starting absent ones) in one
// round trip; a writer bumps a list's generation after its COMMIT (Bump),
// or appends a patch line to it if it is still the value the writer read
// before its COMMIT (Seen, then Patch), in one script per list. Its calls
// share the Cache's breaker, Observer and recovery gate; a bump or patch
// that fails is returned to its caller, never dropped (Cache.Apply queues
// it in the Cache's retrier).
//
// # After-commit effects
//
// What a committed write does to the cache is a list of Effect values, a
// closed set: Invalidate (delete and re-version ids), InvalidateAll,
// StoreIfVersion (write-through), StoreFromLog and AbsentFromLog (a row,
// or a DELETE's absence, from the database's log, stored where no write
// that completed is newer), Bump, Patch and
// PatchFromLog (a list's generation and its lines), AddToFilter and
// Distrust (a Bloom filter). package repo's
// plan makes them, for its own writes and for repo/cdc's changes; Effects
// batches them, merged by target, and runs them: Run, or Cache.Apply,
// which queues what failed, of every kind and in order, in the background
// retry of one Cache (the entity's or the lists' own, a filter's in the
// receiver). That retrier is the only one: it also holds the reads of keys
// whose invalidation is pending and tries at once when Redis answers again,
// and the process's RetryStats count it (GetRetryStats).
//
// # Consistency: versions and leases
//
// Writers change the source of truth first and then call Invalidate (or
// Set). Both replace the id's version token with a fresh random token in the
// same script that deletes (or writes) the entry. Every load reads the token
// before it calls the loader, and the script that stores the loaded value
// refuses the SET when the token has changed since (Stats.RejectedSets). So
// a loader that read old data can never write it into the cache after an
// invalidation that began after the load did.
//
// A plain DEL of the entry from outside asidekit does not replace the
// token: a load that read the source of truth before that writer's change
// and stores after its DEL keeps the old value cached for up to the TTL.
// Writers outside asidekit should call Invalidate (repo.Repository does),
// or let repo/cdc invalidate from the database's log, which does.
//
// Version tokens are random 64-bit values, never counters, and a missing
// token is created (never compared as "absent"): by a load before it calls
// the loader, and by a writer's Version before its statement (for
// SetIfVersion). Therefore an expired, evicted or deleted :ver key
// (InvalidateAll deletes them) can only make a store be refused, never let
// a stale one through: if the token read before the load goes, the key is
// either missing at store time (refused) or holds a new random token
// (refused).
// The :ver key lives for the entry's longest lifetime plus LockTTL plus a
// minute (every store extends it), so in normal operation it outlives its
// entry and refusals stay rare.
//
// Rebuild leases (:lock) make one load per expiry across all processes,
// for Get and GetMany alike (a GetMany takes the leases of all its misses
// in one round trip, loads the ids it won in one call and waits for the
// others). The script that takes a lease checks, in the same step, that
// there is still something to rebuild: on a miss, that no fresh entry
// exists; for a refresh (AsyncRefresh, EarlyRefresh), that the entry is
// still the one the caller saw due. A caller that lost the race to a
// rebuild that has already stored therefore loads nothing. Taking a lease
// is idempotent for its token: when go-redis retries the script after
// losing a reply, the retry is granted the lease the first run took
// (rather than waiting for its own lease until WaitTimeout). While the
// holder loads, a watchdog renews the lease every LockTTL/3, so a load
// slowed past LockTTL (a slow query, a GC pause, CPU starvation) keeps it.
// A holder held up for LockTTL/3 or more between taking its leases and
// calling the loader checks them first (one round trip) and does not load
// the ids whose leases lapsed meanwhile: a miss waits for them as for ids
// leased by others, a refresh leaves them to whoever takes the lease.
// Only a dead holder, a holder starved past LockTTL while it loads, a
// loader that ignores its cancelled context, a lost :lock key, or a
// failing Redis (the fail-open path loads without a lease) can let a
// second load happen; each lapsed lease is counted (Stats.LeasesLost)
// when its holder stores or gives up. A refresh (AsyncRefresh,
// EarlyRefresh) that finds the lease held by another caller leaves the
// id's refreshes in this process to it for 100 ms (the waiters' re-check
// period): the reads of the stale or due entry meanwhile send no lease
// call.
//
// Shared loads in one process (SingleFlight, and the local side of Mutex)
// keep the guarantee too: a caller that joined a load after the Redis step
// that validates it, or any joiner of a load whose store was refused, does
// not take its result but reads again. When Redis fails (or the breaker is
// open) reads fall open to the loader, and there is no Redis step to
// validate a load: concurrent callers then share loads by group commit,
// never taking the result of a load that began before they did (they
// queue for the next one, sent when it returns), so the guarantee holds on
// that path as well.
//
// # Eviction and failover
//
// All three keys may be evicted by an LRU/LFU maxmemory-policy. An evicted
// entry costs a reload; an evicted :ver key makes the stores of the loads
// in flight be refused (an extra load later, never a stale value); an
// evicted :lock key may let a second process load the same id at once
// (duplicate work, still version-checked). Redis replication is
// asynchronous: after a failover to a replica that missed recent writes, an
// Invalidate the old master acknowledged may be lost, and the stale entry
// then lives until its TTL. Options.ReplicaAcks closes that window: an
// invalidation counts as done only once WAIT confirms that many replicas
// have it, and one confirmed by fewer stays pending (retried, its id read
// past Redis) as if Redis had failed.
//
// Logical expiries are written and compared with the clocks of the
// processes that use the Cache: clock skew between them shifts when a value
// counts as expired (and when it is refreshed), never what a version check
// decides.
//
// # Failure
//
// Loader panics are recovered and returned to every waiter as an error
// matching ErrPanic (with the panic value and stack); the lease is
// released, as it is when a loader calls runtime.Goexit. A loader error with a stale value still within Policy.Grace
// serves the stale value. Failed invalidations are retried in the
// background until they succeed or the Cache is closed.
//
// Until a failed invalidation is retried, a load in another process that
// read the row before the write can store the old row: its version check
// passes (after Redis restarted empty there is not even a version to
// check). So a Cache that saw Redis fail, or whose fill finds that Redis
// lost its data (an epoch marker key that the fill script checks, single
// node only), settles for Options.SettleWindow: its misses load uncached
// and no load stores its result, until every writer's retry could have
// landed. A writer that alone lost Redis (a partition) while the others
// kept the old entry is not covered: that window lasts the writer's cut
// plus its retry (counted in Stats.InvalidationsDeferred); repo/cdc closes
// it.
package cacheaside
