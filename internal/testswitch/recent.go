package testswitch

import "sync/atomic"

// RecentRowsFrozen switches off the update of the rows repo/cdc remembers
// (Options.RecentRows) by an UPDATE that the log carries without its old
// row: the remembered row stays as the session first read it, so a later
// UPDATE is applied with an old row that is not the row before it, and a
// unique value changed back and forth counts as unchanged.
var RecentRowsFrozen atomic.Bool

// RecentRowsRelationOff makes repo/cdc keep the rows it remembers across a
// Relation message that changes the table's columns (a new type, say):
// a row rewritten by an ALTER TABLE … USING, which the log does not carry,
// keeps its old values there.
var RecentRowsRelationOff atomic.Bool
