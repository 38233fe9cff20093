// Package testswitch holds switches that turn one of the library's rules
// off, for the tests that show a check fails without the rule: tests of
// the package itself and of the other modules (chaos, benchmarks), which
// cannot reach a package's _test.go hooks. Library code only reads them;
// nothing but a test, or a benchmark variant that shows the rule off,
// sets one.
package testswitch

import "sync/atomic"

// ListBumpsOff switches off the generation bumps of cached queries' lists
// (package repo): every list then stays as it was first cached.
var ListBumpsOff atomic.Bool

// TripOff switches off the node guard's trip (internal/nodeguard): calls
// in flight when a node's breaker opens then each wait out their own
// deadline.
var TripOff atomic.Bool

// ReplicaLSNOff switches off the replay-position check of loads from read
// replicas (package repo): every miss that could go to a replica loads
// from it, however far behind it is. asidebench's replica_naive variant
// sets it for its run, to measure what the check prevents.
var ReplicaLSNOff atomic.Bool

// GenCounterOff makes a cached query's generation bump a plain SET of its
// random token (package cacheaside, ListGenerations.Bump), without the counter that keeps a bump
// applied twice (a retried command whose first reply was lost) from
// bringing back a generation that another bump replaced meanwhile.
var GenCounterOff atomic.Bool

// PatchCompareOff makes a write's patch of a cached query's list compare
// the list's generation with the value it has just before the patch, not
// with the one the write read before its COMMIT (package repo): a write
// whose upkeep comes after a later write's then patches over it.
var PatchCompareOff atomic.Bool

// RowFillOff makes a write through the repository invalidate its row
// after its COMMIT instead of storing the row as stored (package repo).
var RowFillOff atomic.Bool

// FillCompareOff makes a write-through store of a written row
// (repo.Options.WriteThrough) compare the row's version with the value it
// has just before the store, not with the one the write read before its
// COMMIT (package repo): a write whose upkeep comes after a later write's
// then stores its older row over the newer one.
var FillCompareOff atomic.Bool

// VersionStartOff makes a writer's read of an entry's version before its
// statement (cacheaside Entity.Version, ReadBefore) a plain GET that
// starts no version when there is none: its write-through store then
// compares with "" and passes while no version exists, also after an
// InvalidateAll (a TRUNCATE applied by repo/cdc) deleted the one a load
// had started in between.
var VersionStartOff atomic.Bool
