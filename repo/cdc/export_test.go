package cdc

import "time"

// SetAfterApply installs a hook that runs after a transaction's changes
// were applied and before its position counts as applied.
func SetAfterApply(inv *Invalidator, f func(end LSN) error) { inv.afterApply = f }

// IgnoreVisibility makes inv apply transactions as soon as they are
// decoded, visible to other sessions or not (the rule switched off).
func IgnoreVisibility(inv *Invalidator) { inv.ignoreVisibility = true }

// SetRetryBackoff makes every wait of inv between two tries to apply d,
// and with probe false waits it out even when Redis answers meanwhile.
func SetRetryBackoff(inv *Invalidator, d time.Duration, probe bool) {
	inv.retryBackoff, inv.noRedisProbe = d, !probe
}

// OnInvisible installs a hook that runs each time a snapshot shows a
// decoded transaction the applier waits for still invisible (the first
// time, the wait begins).
func OnInvisible(inv *Invalidator, f func()) { inv.onInvisible = f }

// NoRecoveryGate makes inv run without adding CatchUp to its
// repositories' caches (the rule switched off).
func NoRecoveryGate(inv *Invalidator) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.noRecoveryGate = true
	inv.removeGates()
}

// NoWaitMessage makes inv's Wait calls write no message to the log (the
// rule switched off): another process's Wait then returns only at the
// holder's next regular report.
func NoWaitMessage(inv *Invalidator) { inv.noWaitMessage = true }
