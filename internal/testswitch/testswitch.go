// Package testswitch holds switches that turn one of the library's rules
// off, for the tests that show a check fails without the rule: tests of
// the package itself and of the other modules (chaos, benchmarks), which
// cannot reach a package's _test.go hooks. Library code only reads them;
// nothing but a test sets one.
package testswitch

import "sync/atomic"

// ListBumpsOff switches off the generation bumps of cached queries' lists
// (package repo): every list then stays as it was first cached.
var ListBumpsOff atomic.Bool

// TripOff switches off the node guard's trip (internal/nodeguard): calls
// in flight when a node's breaker opens then each wait out their own
// deadline.
var TripOff atomic.Bool
