package testswitch

import "sync/atomic"

// RepairOff switches off the repair that a repository's own writes make
// of upkeep another process may still owe (package repo): a write of a
// row whose id and unique values it does not change then adds nothing to
// the filters and drops no mapping, as a change repo/cdc applies in commit
// order does, so a cached "not found" or a filter that lacks the row,
// left by an earlier write whose upkeep is pending in its retrier,
// outlives a write that completed.
var RepairOff atomic.Bool
