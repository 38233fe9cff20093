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

// LogPatchesOff makes repo/cdc bump every list a change moves a row in,
// as before lists were patched from the log (cacheaside.PatchFromLog):
// the baseline of asidebench query's asidekit_cdc.
var LogPatchesOff atomic.Bool

// LogSnapshotOff makes a reader of a cached query's list apply every line
// repo/cdc appended to the list's generation, whether or not the window
// it patches saw the line's transaction: a line of a change the window
// holds already then takes back a later change of the same row.
var LogSnapshotOff atomic.Bool

// LogOrderOff makes repo/cdc append its lines to a list's generation
// whatever the generation carries (cacheaside.PatchFromLog): a line of an
// older transaction then lands after a repository write's own line, and
// takes the row back on every window that did not see it.
var LogOrderOff atomic.Bool

// LogStoreCompareOff makes a row that repo/cdc stores from the log
// (cacheaside.StoreFromLog) compare with the version's position as if the
// change were the newest write: a change older than a write that completed
// then stores its row over the newer one, whenever the version records a
// position.
var LogStoreCompareOff atomic.Bool

// ListRowCheckOff makes a cached query's List return every row its page
// names, whatever the row's own filter values say: a row that a plain-SQL
// change moved out of the list, whose line the Invalidator has not
// appended yet, is then listed after a repository write that completed
// and left it elsewhere.
var ListRowCheckOff atomic.Bool

// ListReassertOff makes a repository write of a table that repo/cdc feeds
// leave the lists alone when it leaves its row where it read it: a row
// that a plain-SQL change moved into a list, whose line the Invalidator
// has not appended yet, is then missing from it after the write
// completed.
var ListReassertOff atomic.Bool
