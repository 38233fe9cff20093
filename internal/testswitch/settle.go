package testswitch

import "sync/atomic"

// SettleOff switches off the settle window of package cacheaside: a Cache
// that saw Redis fail, or that finds Redis lost its data (the epoch
// marker), stores its loads' results at once, as before the rule, so a
// load that read a row before a write whose invalidation waits in the
// writer's retrier can cache the old row.
var SettleOff atomic.Bool
