package testswitch

import "sync/atomic"

// CDCListsOff switches off the list upkeep of changes that repo/cdc reads
// from the log (package repo, feed.Queue through core.queue): such a change
// then bumps no generation of a cached query, so a list stays as it was
// cached across a plain-SQL insert, move, soft delete or delete. The
// repositories' own writes keep their bumps and patches.
var CDCListsOff atomic.Bool

// CoveredAlwaysOn makes repo/cdc treat every change as covered by a
// TRUNCATE (rowchange.Change.Covered), truncated table or not: the
// change then queues only its filters' additions, and a row or mapping
// cached before it stays as it was.
var CoveredAlwaysOn atomic.Bool
