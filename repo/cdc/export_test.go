package cdc

// SetAfterApply installs a hook that runs after a transaction's changes
// were applied and before its position counts as applied.
func SetAfterApply(inv *Invalidator, f func(end LSN) error) { inv.afterApply = f }
