package lock

// Sleeps reports how many times l's waiters went to sleep after a failed
// try: a test that must act while a waiter really waits polls it.
func Sleeps(l *Locker) uint64 { return l.stats.sleeps.Load() }
