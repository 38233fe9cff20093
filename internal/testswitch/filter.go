package testswitch

import "sync/atomic"

// FilterTrustOff switches off the completeness rule of Bloom filters
// (package guard/bloom): a shard with no trusted marker (never rebuilt, or
// its keys lost to a Redis restarted empty, a FLUSHALL, an eviction)
// answers from its bits as if it were complete, so a key whose bits are
// gone reads as absent, and no check starts the automatic rebuild: the
// behaviour before issue 28.
var FilterTrustOff atomic.Bool
