// Package configstore keeps settings in a database table (asidekit_config,
// the source of truth) and mirrors them in one Redis hash per scope, so that
// every process reads them with one round trip and hears about changes.
//
// Reads (Get, All) use the hash. When the hash is missing (never built,
// evicted, flushed) the readers rebuild it from the table under a Redis lock:
// one process queries the database, the others wait for it. A built hash
// carries a marker, so an empty configuration is told apart from a missing
// hash and costs no rebuild. Writes go on during a rebuild and land in the
// hash beside it; but if the hash vanishes again while the table is read,
// the rows read may predate a write whose entry vanished with it, so the
// rebuild is refused and the table read again (Stats.RebuildsLost). A read
// that sees the hash vanish after each of three rebuilds reads the table.
//
// When Redis fails (connection refused, timeout, an error reply) a read
// falls back to the table, the source of truth: one query, tombstones left
// out as a rebuild leaves them out, counted in Stats.DBFallbacks. So that
// an outage does not turn every read into a query, the concurrent
// fallbacks of a Store share one query: one for all its Alls, one per key
// for its Gets. Options.NoDBFallback turns the fallback off. A read whose
// context has ended never falls back, nor one that timed out waiting for
// another process's rebuild (ErrTimeout: Redis works).
//
// Writes (Set, SetMany, Delete) change the table in a transaction that bumps
// each key's version, then copy the new entries into the hash with a
// version check and publish them, both in one Lua script. Whatever order two
// processes' copies arrive in, the hash keeps the higher version, which is
// the later commit. Deleted keys stay in the table and the hash as
// tombstones (a version without a value), so that a late copy of an older
// write cannot bring a deleted key back. A write whose copy fails (Redis
// down) stands in the table and returns an error wrapping ErrNotMirrored;
// the hash lags until Reconcile repairs it or, if it was lost, a reader
// rebuilds it.
//
// Reconcile compares the table with the hash and repairs the hash; Run does
// so periodically. Watch streams changes, starting (and after every
// reconnection restarting) with the whole hash, so a Local copy fed by it
// converges even when a notification is lost.
//
// Redis keys, for namespace "ak" and scope "default":
//
//	ak:cfg:{default}          hash: key → "<version>:<value>", or "<version>" once deleted;
//	                          field "" marks it built, field "\x00rebuild" names the rebuild under way
//	ak:cfg:{default}:lock     rebuild lock (SET NX PX, random token)
//	ak:cfg:{default}:changes  Pub/Sub channel of changes
//
// Both keys share one hash tag, so the package works on Redis Cluster.
//
// Eviction and failover: the hash and the lock need no particular eviction
// policy. An evicted or flushed hash is rebuilt by the next reader; an
// evicted lock costs at most one extra database query. A promoted replica
// may lack the latest copies into the hash (replication is asynchronous):
// readers then see older values, never invented ones, until Reconcile (run
// it periodically with Run) copies the table again; a watcher reconnects,
// takes a new snapshot and receives Reconcile's repairs.
//
// The table must exist: run schema.Migrate (or migrate schema.Config).
package configstore
