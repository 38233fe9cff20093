package testswitch

import "sync/atomic"

// CDCListsOff switches off the list upkeep of changes that repo/cdc reads
// from the log (package repo, feed.Queue through core.queue): such a change
// then bumps no generation of a cached query, so a list stays as it was
// cached across a plain-SQL insert, move, soft delete or delete. The
// repositories' own writes keep their bumps and patches.
var CDCListsOff atomic.Bool
