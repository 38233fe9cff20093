package repo

// IgnoreReplicaLSN makes r load every miss from its replica, however far
// behind (tests only: shows the stale fill the check prevents). Call it
// before r is used.
func IgnoreReplicaLSN[T any, ID comparable](r *Repository[T, ID]) { r.c.reads.ignoreLSN = true }
