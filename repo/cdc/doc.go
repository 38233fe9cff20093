// Package cdc keeps the cache in step with every committed write to
// PostgreSQL, whoever makes it: plain SQL, a migration, another service,
// or a repository write whose COMMIT reply was lost. An Invalidator reads
// the write-ahead log through logical replication (the built-in pgoutput
// plugin, github.com/jackc/pglogrepl over pgx) and applies each committed
// change of the registered tables through the repositories:
//
//   - INSERT adds the key to the Bloom filters and drops cached "not
//     found" answers, by id and by unique value (GetBy);
//   - UPDATE invalidates the row and the GetBy mappings of unique values
//     that changed;
//   - DELETE invalidates the row (and its mappings, when the log carries
//     the old values);
//   - TRUNCATE invalidates every key of the entity and its mappings within
//     the cache's namespace (a SCAN of the entity's keys on every master,
//     never FLUSHDB), once the transactions applied with it are; a row
//     written after the TRUNCATE in those transactions (BEGIN; TRUNCATE;
//     INSERT …; COMMIT) only adds its keys to the Bloom filters, its other
//     upkeep being the TRUNCATE's.
//
// Use:
//
//	inv, err := cdc.New(dsn, &cdc.Options{Slot: "shop_cache"})
//	err = inv.Register(products, users) // *repo.Repository values
//	go inv.Run(ctx)                     // in every process
//
// # Guarantees
//
// At least once: the slot's confirmed position moves only over
// transactions whose invalidations Redis has taken; a crash at any point
// replays from there, and invalidations are idempotent. Transactions are
// applied in commit order, each at its COMMIT (pgoutput sends a
// transaction only once it has committed); a large one is applied in
// batches of Options.BatchSize keys, pipelined (per slot on a Cluster), in
// bounded memory, and counts as applied after its last batch (until then
// Stats.PendingDone of Stats.Pending is its progress).
//
// One process applies: PostgreSQL lets one connection at a time stream
// from a slot, so every process may Run the Invalidator; one holds the slot
// and the others stand by, each checking every Options.StandbyRetry on one
// connection of its own whether the slot is still held. When
// the holder exits or its connection drops, one of them takes over within
// about that long and resumes from the confirmed position; a holder that
// hangs with its connection open keeps the slot until the server's
// wal_sender_timeout (60 s by default).
//
// Any process may wait for a write made around the repositories: Position
// after it, then Wait. The holder waits for its own applier; another
// process follows the slot's confirmed position, and its Wait writes a
// message to the log that makes the holder report at once.
//
// While Redis is down the Invalidator keeps its position and retries the
// same transaction with backoff (up to Options.MaxBackoff); Stats reports
// the errors and the lag, in bytes of WAL and in seconds since the waiting
// transaction committed.
//
// # Lost slot
//
// A slot that falls further behind than the server's
// max_slot_wal_keep_size (PostgreSQL 13+) is invalidated
// (pg_replication_slots.wal_status 'lost'): the WAL it needed is removed,
// and START_REPLICATION fails (SQLSTATE 55000). The changes in that WAL
// are gone, so any cached row may be stale and any row inserted meanwhile
// unknown to the Bloom filters. Setup (and so Run, at every start and
// reconnection) finds the slot lost, drops it and creates it anew; in the
// transaction that creates it, it writes a logical decoding message to the
// WAL, the new slot's first change. The process that holds the new slot
// (one at a time) applies that message like a TRUNCATE of every registered
// table: InvalidateAll, then RebuildFilter where the target has filters, retried
// until Redis takes them, before any later change, and confirms it only
// then, so a holder that dies meanwhile leaves it to the next. A
// recreation is counted in Stats.SlotsRecreated (by the process that made
// it) and costs a cold cache: raise max_slot_wal_keep_size, or fix what
// kept the Invalidator behind. Processes that find the slot lost at once
// take turns under an advisory lock on the slot's name; the first replaces
// it, the others find a valid slot and leave it alone. Before PostgreSQL
// 14 pgoutput cannot pass messages on, and the process that recreated the
// slot invalidates and warms itself, after creating it.
//
// # Setup and cost
//
// The server needs wal_level=logical (a restart) and a role with the
// REPLICATION attribute. Setup (which Run calls) creates the publication
// and the slot if they are missing; only Drop removes them (Setup replaces
// a lost slot, above). A slot keeps
// the WAL its consumer has not confirmed: a service that stops for good
// must Drop it, or the server's disk fills (see OPERATIONS.md,
// max_slot_wal_keep_size).
//
// Without REPLICA IDENTITY FULL (SetReplicaIdentityFull) the log carries
// only the primary key of an updated or deleted row, so the GetBy mapping
// of an old unique value stays cached; GetBy checks the row it maps to and
// drops a mapping that no longer matches, so it never returns a wrong row,
// at the price of one more read. With FULL every UPDATE and DELETE writes
// the whole old row to the WAL.
//
// Bad input never stops the stream: a registered table without a primary
// key or replica identity is left out of the publication (Stats.BadTables),
// and a change of an unregistered relation is counted in Stats.Skipped and
// passed. Schema changes (ALTER TABLE) are followed: pgoutput describes a
// relation again before its first change after the change.
//
// # Column types
//
// pgoutput sends each value as text, and each relation's column types
// (OIDs). A value is decoded by its PostgreSQL type into its field's Go
// type with pgx's type map, as a load of the row through the driver
// would decode it, never by parsing the text as some Go type: integers,
// numeric (into floats, strings or a sql.Scanner), booleans, text and
// varchar, uuid, bytea, json and jsonb, date, time, timestamp and
// timestamptz (in any session TimeZone), interval, arrays, enums and
// other types the map does not know (as text), into plain fields,
// pointers, gorm.DeletedAt, sql.Null* and any sql.Scanner. That holds
// for every column a change is used by: the primary key, unique keys
// (GetBy), and the filter, order and soft-delete columns of cached
// queries (repo.NewQuery).
//
// A NULL in the log is a known value (a NULL soft-delete column: the row
// is live); a column the log leaves out is unknown: the columns outside
// the key in an old row without REPLICA IDENTITY FULL, and an unchanged
// TOASTed value (taken from the old row when FULL carries it).
// An UPDATE that changes no filter, order or soft-delete column, with
// FULL, leaves the query's lists alone; with the default identity the old
// values are unknown and every list of the query is invalidated (counted
// in the query's Fallbacks), unless the Invalidator remembers the row.
//
// # Remembered rows
//
// The log is a table's changes in commit order, and a session reads all
// of them: the row before an UPDATE is the row after the last change of
// its key. So the Invalidator remembers, per table without FULL, the
// columns of the cache keys (primary key, unique keys, the queries'
// filter, order and soft-delete columns) of up to Options.RecentRows rows
// (default 100,000; about 200 bytes a row for a table keyed by an id and
// an email) as the session last read them, and applies an UPDATE or
// DELETE of a remembered row as with FULL: a unique value or list place
// the change left alone costs nothing. A 50,000-row UPDATE of remembered
// rows is applied at about the speed of FULL (BenchmarkApply_update:
// 108k rows/s against 48k without, 121k with FULL). What the session read
// is what it remembers: rows inserted or changed since it began; a new
// session (a restart, a takeover) starts with none. It forgets a table's
// rows on a TRUNCATE, a value it could not decode and a Relation message
// that changes the table's columns or types, and every row on a message
// it cannot parse and a recreated slot. A rewrite the log does not carry
// (ALTER TABLE … TYPE … USING, which keeps no old value anywhere) needs
// the table's InvalidateAll, as it did before.
//
// A change that still cannot be decoded (a value the field's type does
// not take, such as a text column behind an integer field, which a load
// through GORM would parse; a tuple that does not match its relation; a
// missing key; a message that does not parse) is never skipped: it gets
// the safe superset of its cache work, is counted in Stats.Undecoded,
// recorded in Stats.LastError (ErrUndecoded) and logged once per table
// and column. A lost list column invalidates every list of the query; a
// lost new value of a unique key drops every mapping of the key and
// distrusts its Bloom filter; a lost primary key invalidates every cached
// row of the table (a SCAN, as for TRUNCATE) and distrusts its filter; a
// message that does not parse invalidates every registered table, as a
// TRUNCATE. Give such a column a field of its type.
package cdc
