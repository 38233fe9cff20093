package testswitch

import "sync/atomic"

// HealthBitsOff switches off the bits of a Cache's health word (package
// cacheaside, health.go): a recovery gate that closes, an invalidation
// queued for the retrier and a Redis failure then set nothing, so a read
// passes the gate as if all were well: it reads Redis while a recovery
// gate holds reads, reads a key whose invalidation is pending, and never
// asks an open breaker.
var HealthBitsOff atomic.Bool
