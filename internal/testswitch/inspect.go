package testswitch

import "sync/atomic"

// SecondLookOff switches off the inspector's second look
// (internal/inspect): every disagreement a first look sees then counts as
// a violation at once, an invalidation in flight included.
var SecondLookOff atomic.Bool
