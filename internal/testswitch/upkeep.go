package testswitch

import "sync/atomic"

// UnknownUpkeepOff switches off the cache upkeep of writes whose outcome
// is unknown (package repo): a write whose database call failed without
// proving that nothing was written (the connection broke, or the context
// ended, while the statement or its COMMIT was in flight) then returns its
// error with no invalidation, no list bump and no filter add or distrust,
// as before the rule.
var UnknownUpkeepOff atomic.Bool

// BeforeGuardOff switches off the guard of a write's statement (package
// repo, guard.go): a write outside a transaction then writes its row
// whatever a concurrent writer changed since it read the row's list and
// unique columns, and patches and invalidates for the row as it read it.
var BeforeGuardOff atomic.Bool

// UnknownBumpOff makes a Transaction whose COMMIT's outcome is unknown
// patch its lists as if it had committed (package repo, tx.go), where it
// bumps them: a COMMIT that did not happen then leaves lines that list
// its rows where the table never had them.
var UnknownBumpOff atomic.Bool

// ModifyLockOff switches off Modify's locked run (package repo, modify.go):
// a Modify whose conditional UPDATE found no row, of a row that meets the
// conditions by the time Modify asks why (deleted and inserted again, or
// changed, meanwhile), then answers ErrConditionFailed, though the row
// never failed them.
var ModifyLockOff atomic.Bool

// CachedBeforeOff switches off the read of a row's unique columns from
// the cache before a write (package repo, keys.go cachedBefore): every
// write of a repository with unique keys reads them with a SELECT, as
// before. Benchmarks and statement counts compare the two.
var CachedBeforeOff atomic.Bool

// CachedBeforeUnguarded makes cachedBefore trust the cached row without
// guarding the statement by it (package repo, keys.go): a write over a row
// whose cached value is older than the table (a plain-SQL change, a write
// in flight) then invalidates the mappings of the unique values the
// cache held, not those the row had, and the old ones keep pointing at it.
var CachedBeforeUnguarded atomic.Bool

// PutLockedOff switches off the second attempt of a write under the
// row's lock (package repo, write.go writeLocked) after an upsert (Put's,
// or Create's over a soft-deleted row) that failed as a duplicate or a
// deadlock, and after any single-row write that failed as a deadlock: the
// spurious unique violations and deadlocks PostgreSQL can raise when
// concurrent writes of one row race an upsert then reach the caller.
var PutLockedOff atomic.Bool

// TxReadUnlocked makes a write in a transaction of a repository with
// unique keys and no declared queries read the row's unique columns
// without locking it (package repo, query_list.go lockBefore), as before
// the rule: a write committed between that read and the statement then
// leaves the mappings of the values it set pointing at the row.
var TxReadUnlocked atomic.Bool
