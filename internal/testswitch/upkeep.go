package testswitch

import "sync/atomic"

// UnknownUpkeepOff switches off the cache upkeep of writes whose outcome
// is unknown (package repo): a write whose database call failed without
// proving that nothing was written (the connection broke, or the context
// ended, while the statement or its COMMIT was in flight) then returns its
// error with no invalidation, no list bump and no filter add or distrust,
// as before the rule.
var UnknownUpkeepOff atomic.Bool
