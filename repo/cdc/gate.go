package cdc

import (
	"github.com/asidekit/asidekit/cacheaside"
)

// addGates adds CatchUp as the recovery gate of every registered
// repository's cache that has none from inv yet (one per cache). Register
// calls it, and Run at its start; Run removes them when it returns.
//
// So a process's reads do not use its cache from Register on, and from
// each Redis failure the process sees, until every transaction committed
// before Redis answered again has been applied to the cache (by this
// process or the one that holds the slot): rows changed while the service
// was down, changes the holder could not apply while Redis was away, and
// repository writes whose invalidation failed in another process (their
// Put returned ErrAfterCommit) all end in the log before that position.
// Meanwhile reads go to the database, uncached (see
// cacheaside.RecoveryGate); in a process that stands by, the gate opens
// once the holder reported the position, which its CatchUp asks for
// (see Wait).
// Callers hold inv.mu.
func (inv *Invalidator) addGates() {
	if inv.noRecoveryGate {
		return
	}
	if inv.gated == nil {
		inv.gated = map[*cacheaside.Cache]func(){}
	}
	for _, t := range inv.targets {
		c := t.Cache()
		if c == nil {
			continue
		}
		if _, ok := inv.gated[c]; !ok {
			inv.gated[c] = c.AddRecoveryGate(inv.CatchUp)
		}
	}
}

// removeGates removes the gates addGates added. Callers hold inv.mu.
func (inv *Invalidator) removeGates() {
	for c, remove := range inv.gated {
		remove()
		delete(inv.gated, c)
	}
}
