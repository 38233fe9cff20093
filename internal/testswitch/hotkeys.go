package testswitch

import "sync/atomic"

// HotKeyInvalidationOff switches off the invalidation of the automatic
// near cache of hot keys (package cacheaside, Options.HotKeys): a change
// that Redis (or a broadcast) reports no longer drops a promoted value, so
// another process keeps serving it until its local life ends. The
// writer's own drop before its write returns is kept.
var HotKeyInvalidationOff atomic.Bool
