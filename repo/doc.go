// Package repo gives typed repositories over GORM that read through
// asidekit's cache-aside engine:
//
//	users, err := repo.New[User, int64](db, cache, &repo.Options{
//		Policy: cacheaside.Policy{TTL: 10 * time.Minute, NullTTL: time.Minute},
//	})
//	u, err := users.Get(ctx, 42)
//
// A Repository takes its table and its (single-column) primary key from
// the GORM schema of T. Ids may be any integer type, a string type, or a
// type implementing encoding.TextMarshaler (uuid-like ids); integer and
// string ids become cache ids without reflection or fmt.
//
// # Reads
//
// Get and GetMany read through a cacheaside.Entity named after the table
// (Options.Name). A batch is one MGET (one per slot on a Cluster) plus at
// most one SELECT … WHERE pk IN (…) for the misses, split into chunks of
// Options.BatchSize ids when larger (with Mutex, AsyncRefresh or
// EarlyRefresh, one more round trip leases the misses, so that each id is
// loaded once across processes). Ids absent from the database are
// cached as "not found" for Policy.NullTTL (one minute by default) and
// answer ErrNotFound, which errors.Is also matches with
// cacheaside.ErrNotFound and gorm.ErrRecordNotFound.
//
// GetBy reads by a unique column (GetBy(ctx, "email", v)): the
// value → primary key mapping is cached in a second entity, named
// "<name>.by.<column>", and the row itself comes from the entity cache. The
// row is checked against the value, so a mapping that went stale can never
// return a wrong row.
//
// # Writes
//
// Create, Put, Update and Delete write to the database first, then
// invalidate. Outside a transaction the invalidation runs right after the
// write succeeds. Inside one (Transaction, then Repository.WithTx) it is
// collected and runs only after a successful commit; a rollback
// invalidates nothing and adds nothing to the filter. Create and Put add the
// id to the Bloom filter and clear a cached "not found"; writes that change
// a unique column also invalidate the old and the new mapping of GetBy.
// A write that breaks a unique constraint returns ErrDuplicate, which
// errors.Is also matches with gorm.ErrDuplicatedKey, whether or not the
// *gorm.DB was opened with gorm.Config{TranslateError: true}. Put leaves v
// holding the row as stored, timestamps included.
// With a gorm.DeletedAt in the model, Delete is a soft delete: reads no
// longer see the row, and Create may use its primary key again (it
// replaces the deleted row). Ids are checked before any write: one that
// cannot be a cache key is ErrInvalidID, and nothing is written.
// CreateMany and PutMany write many rows in batches of Options.BatchSize
// (one INSERT per batch) in one transaction, the caller's or their own,
// with the same upkeep after the commit, merged into one pipelined call
// per filter and entity.
// When the database write succeeded but the cache upkeep after it failed
// (Redis down), the write returns nil: it is in the database, and an error
// would make callers write twice. The failed invalidations and filter adds
// are retried in the background until Redis takes them, counted and
// logged (GetAfterCommitStats); Options.AfterCommitErrors returns an error
// matching ErrAfterCommit instead. Because such upkeep may be pending in
// another process, a write cannot count on earlier writes' upkeep having
// landed: it adds the row's id and unique values to the filters and drops
// their GetBy mappings even when they did not change (one filter add per
// filter and one mapping drop per unique key, sent with the rest of its
// upkeep; the next GetBy of the value reloads its mapping), so that a
// write that completed leaves no cached "not found" and no filter gap for
// its row. Cached lists are not repaired that way (see Cached queries).
//
// A write whose database call fails without proving that nothing was
// written (the connection broke, or the context ended, while the
// statement or its COMMIT was in flight) may have committed: it returns
// its error unchanged after the upkeep a success would have done
// (invalidations, list bumps, filter adds of what it knows), run and
// retried as after a commit and counted (AfterCommitStats.Unknown); so does
// a Transaction whose COMMIT outcome is unknown. A Create whose generated
// key was lost with the reply (an INSERT outside a transaction, with GORM's
// SkipDefaultTransaction) makes the primary-key filter untrusted instead
// (AfterCommitStats.Distrusts): it answers "maybe" until it has rebuilt
// itself from the table. An error the server answered with, a refusal by
// GORM and a failure to connect prove the write failed: no upkeep.
//
// Writes that bypass the repository (plain SQL, other services) invalidate
// nothing; package repo/cdc follows PostgreSQL's WAL and applies them by
// the same rule as the repository's own writes, and covers a COMMIT that
// the server carried out after the client gave up on it.
//
// InsertIfAbsent de-duplicates on a unique key (Options.UniqueKey) with
// INSERT … ON CONFLICT DO NOTHING: the unique index decides, never a racy
// read-then-insert.
//
// # Bloom filter
//
// With Options.Filter, the repository keeps a Bloom filter of primary keys
// (named after the entity) in the Policy's Filter, so that reads of ids
// that exist nowhere cost no SQL, and a filter of each unique key's values,
// so that GetBy of a value no row holds (an unknown slug) answers
// ErrNotFound with no SELECT and InsertIfAbsent of a new key goes straight
// to its INSERT. Writes through the repository keep the filters up to date
// after their commit, whatever the write (one rule decides what every
// write, and every change repo/cdc reads from the WAL, does to the cache);
// RebuildFilter rebuilds them from the table through bloom's generation
// swap, so deleted rows stop passing. A filter is trusted only while it is
// known complete: a new one, or one whose keys Redis lost (a restart, a
// FLUSHALL, an eviction), answers "maybe" and rebuilds itself from the
// table in the background, one process at a time; WarmFilter waits for
// that. Rows written around the repository without repo/cdc read as
// absent until a rebuild.
//
// # Cached queries
//
// NewQuery declares a list of rows by equality filters and one order
// (QueryOf{Name: "by_category", Where: []string{"category_id"}, Order:
// "created_at DESC, id"}); Query.List reads a page of it by keyset
// pagination (an opaque, checksummed cursor) or at an offset (Page.Offset,
// whose miss reads the skipped rows too) and Query.Count counts it.
// What is cached is ids and counts, never rows: the rows of a page come
// through GetMany and share the entity cache, the near cache and the
// filter. A page or count is a cacheaside entry (so its reload is shared
// across processes as the query's Policy.Strategy says) whose id holds
// two generations: the one of the lists of its filter values and the one
// of all the query's lists. A generation is a random token in a Redis key
// of its own (cacheaside.ListGenerations: behind the cache's breaker,
// observer and recovery gate, as every other key); a list read costs one
// pipelined round trip to read both (starting them when absent), then the
// page's GET, then GetMany.
//
// Every writer, by the one rule that the repository's writes and repo/cdc
// share, bumps after its commit the generations of the lists of the old
// and the new row's filter values (a move from category 3 to 7 bumps 3
// and 7, no other); a change of columns outside the filter and order
// columns bumps nothing, since lists hold ids; a rollback bumps nothing. When the old values are
// unknown (repo/cdc on a table without REPLICA IDENTITY FULL: the log
// carries no old row for an UPDATE or a DELETE) the generation of all
// the query's lists is bumped instead, counted as a fallback in
// QueryStats; a TRUNCATE does the same. One bump is one short script per
// generation (a SET of a new token and a count): O(1) per write, however
// many pages are cached.
//
// A write through the repository patches instead of bumping, when every order column is an integer, a boolean or a time
// (Go orders them as PostgreSQL does; a string column's order depends on
// its collation): before its statement it reads the generations of the
// lists it will change (one GET each, pipelined), and after its COMMIT it
// appends to each a line saying where its row now is ("row 42 at order
// key k" or "row 42 not in this list") if the generation is still the
// value it read, and bumps it otherwise (one script per list). A keyset
// page of such a query is cached under the generation's first part (its
// token) as a window: its ids, their order keys and 16 rows more; a
// reader applies the lines to the window, so pages stay cached through
// writes. A window that removals left too short to fill its page is read
// alone. After 32 lines the next write bumps. Offset pages and counts are
// cached under the whole generation (token and number of lines), so any
// write of their list reloads them.
//
// Why a list read never misses a write that completed before it began:
// the writer bumps a generation only after its COMMIT, and returns only
// after the bump. A read that begins after the write completed therefore
// reads the new generation, and every page under it was loaded by a
// reader that read that generation first, hence ran its SELECT after the
// COMMIT. A page loaded before the bump lands under the old generation's
// key, which no reader looks up again: the race between a fill and an
// invalidation cannot bring a stale list back. Tokens rather than
// counters make a generation key lost to eviction or expiry
// (GenerationTTL) cost only a reload, never an old page; the count a bump
// appends to its token makes a bump that Redis runs twice (a command sent
// again after its reply was lost) set a new generation the second time,
// never the one another writer's bump replaced meanwhile. Writes seen
// through repo/cdc follow within the CDC lag.
//
// Why patches keep that promise: a line is appended only after the
// write's COMMIT and before it returns, so a read that begins after the
// write completed reads it. A line states its row's place after the write,
// whatever the window held, so applying it to a window loaded before or
// after the COMMIT gives the same list. And lines land in commit order: a
// write appends only if no other line or bump landed since it read the
// generation before its COMMIT, so the upkeep of an earlier write that
// comes after a later write's (its process was slow, or its Redis link
// cut) finds the generation changed, and bumps. Writes in a transaction's
// view patch when the transaction commits (each read its generations
// before its statement; the lines of one list that read the same value
// go in one call, in the order of the writes); writes of unknown outcome,
// and a transaction whose COMMIT's outcome is unknown, bump: their COMMIT
// may not have happened, and a line would list a change that may not
// exist. CreateMany and PutMany patch as a transaction's writes do (one
// read of each list's generation before their statements, the rows read
// back with RETURNING: an upsert keeps created_at). Modify, UpdateColumns
// and InsertIfAbsent bump (a repository that repo/cdc follows patches the
// list Modify and UpdateColumns find the row in: see below), and so does
// a write
// whose row has an order time finer than a microsecond (PostgreSQL would
// round it) or at a UTC offset other than 0 (a timestamp column without
// time zone keeps the wall clock).
//
// Changes repo/cdc reads from the log patch too, when the log gives the
// row's place on both sides (an INSERT, a DELETE or an UPDATE with
// REPLICA IDENTITY FULL or of a remembered row), one script call per list
// and batch (cacheaside.PatchFromLog). They come by the CDC lag: a window
// loaded meanwhile may hold the change and a later one of the same row
// too, a repository write that has returned among them, and the line
// would take the row back. So a log line names its transaction, a window
// on PostgreSQL is read with the snapshot of its own SELECT (joined to
// pg_current_snapshot()), and a reader applies a log line only if that
// snapshot did not see the line's transaction: a window that saw it holds
// it and whatever of the same row followed (a later writer of a row waits
// for the earlier one's lock, so it becomes visible after it). Log lines
// are appended only to a generation that carries nothing but log lines,
// in commit-position order; after a writer's line, or for a batch sent
// again, the Invalidator bumps. A window read without a snapshot (SQLite)
// cannot take a log line: its page is read alone.
//
// Where repository writes meet the log: the lists lag the table by the
// Invalidator's lag, so a plain-SQL move of a row is in them only once
// its line lands. A repository write of the same row that completes
// meanwhile reads the row where the move put it and patches from there:
// the list the row left still lists it, and the list it joined lacks it
// when the write leaves it in place (a write that stays patches nothing).
// Two rules close that window. List leaves out a row whose own filter
// values, read fresh through GetMany, put it in another list, when every
// filter column is an integer or a bool (their values compare in Go as in
// PostgreSQL; a string may match under its collation what Go calls
// different, so a list filtered by one may show such a row until the
// Invalidator's line lands). And a repository registered with an
// Invalidator (cdc's Register, in every process that writes) re-asserts
// its row's place in the list it stays in: one line, as for a move
// (Modify and UpdateColumns read that list's generation before their
// statement for it). A write in a process that did not register leaves
// the row missing from the list it joined until the Invalidator catches
// up. Count of the list the row left counts it until the line lands in
// any case: a count has no rows to check.
//
// The limits: a write's old filter values are read before the write
// (one more SELECT for Update, Modify, UpdateColumns, Put and Delete on a
// repository with queries or unique keys). In a transaction on
// PostgreSQL that read locks the row. Outside one the write's statement
// is guarded instead: it changes the row only while the columns read
// still hold what was read (one equality each in its WHERE; an upsert's
// DO UPDATE … WHERE), and a statement that matched no row because a
// concurrent writer changed them meanwhile runs again in a Transaction of
// its own (BEGIN, the locked read, the statement, COMMIT). Without it a
// writer that puts a row back where it read it would look unmoved and
// patch nothing, and the other writer's later line would take the row
// back. The Many forms run in a transaction of their own, whose read
// locks the rows. Columns of types that "=" may not compare (JSON,
// geometric, custom) and serialized ones are not guarded: two writers
// that move the same row at the same moment through such a column may
// leave the list the row passed through stale until a later write that
// moves the row into or out of that list, or the page's TTL: run such
// writes in a Transaction. The rows of a page are read after its ids, so a row
// changed meanwhile comes as it is now, and one deleted meanwhile is left
// out. Filter values may not be nil (lists of NULL are not cached) and
// order columns may not hold NULL. A filter value of the wrong type or
// count, a page size outside [1, MaxPageSize] and a cursor that was
// altered or belongs to other filter values are errors matching
// ErrInvalid, and nothing is cached. When Redis is unreachable a list is
// read from the database, uncached. A write whose error left its outcome
// unknown (its COMMIT may have landed) does the list upkeep a success
// would, as the Writes section says; one whose bumps failed in Redis (it
// returns nil, or ErrAfterCommit under Options.AfterCommitErrors) leaves
// them to the background retry: until repo/cdc or that retry bumps them,
// the lists its row left and joined may stay as they were for that row, even
// past a later write of the row that succeeds but does not move it (it
// changes no list) and past writes of the lists' other rows (they patch
// their own rows), until a later write moves the row into or out of them.
//
// # Ownership
//
// Entities are named after their table and namespaces default to "ak", so
// two services left on the defaults that both have a products table would
// share cache entries. New therefore claims the entity's name in the
// Cache's namespace: it records the owner — the database server
// (PostgreSQL's system identifier, else its address and port), the
// database and the schema-qualified table; SQLite's file; the dialect and
// table elsewhere — with HSETNX in one Redis hash per namespace,
// "<ns>:owners" (one key: Cluster-safe; no TTL). Another instance of the
// same service, or a restart, finds its own record. A repository over
// another database or table under the same name fails with
// ErrNamespaceCollision and writes nothing. Options.Ownership overrides
// the check: OwnershipShared for deliberate sharing, OwnershipTakeOver
// after moving the service to a new database.
//
// A change of the model (a column added during a rolling deploy) is not a
// collision: old and new instances read the same table, and JSON decodes
// either shape (unknown fields are ignored, missing ones left zero). The
// record follows the newer model. A change that the two shapes cannot
// share (a field renamed or retyped) calls for a new Options.Name.
//
// When Redis or the database does not answer within ClaimTimeout, New
// fails open: it logs a warning with log/slog's default logger, and Claim
// returns an error matching ErrOwnershipUnchecked.
//
// DB returns a plain *gorm.DB on T's table for queries the repository does
// not cover; they are not cached.
//
// # Read replicas
//
// Misses of Get and GetMany may load from a streaming replica
// (Options.ReadDB, or dbresolver on the *gorm.DB given to New); every
// other statement stays on the primary. Invalidations record the WAL
// position of the write behind them, and a miss loads from the replica
// only once it has replayed that position, else from the primary, so no
// fill is older than a write it follows. A position that could not be read
// (Redis failed or lost the id's version, a write could not read its own:
// UnknownLSN) sends the load to the primary. TrackWrites and ReadAfter carry
// a write's position to reads in other processes; ReadStats counts where
// loads went. See replica.go for the reasoning.
package repo
