package repo

// IgnoreReplicaLSN makes r load every miss from its replica, however far
// behind (tests only: shows the stale fill the check prevents). Call it
// before r is used.
func IgnoreReplicaLSN[T any, ID comparable](r *Repository[T, ID]) { r.c.reads.ignoreLSN = true }

// IgnoreUnknownLSN makes r take a position it could not read for 0, and
// load from its replica (tests only: shows the stale fill that loading
// from the primary prevents). Call it before r is used.
func IgnoreUnknownLSN[T any, ID comparable](r *Repository[T, ID]) { r.c.reads.ignoreUnknown = true }

// EntryKey returns the Redis key of id's cached entry in r (tests only: a
// test deletes it to make a miss that keeps the id's version).
func EntryKey[T any, ID comparable](r *Repository[T, ID], id ID) string {
	k, err := r.c.idKey(id)
	if err != nil {
		panic(err)
	}
	key, err := r.c.ent.Key(k)
	if err != nil {
		panic(err)
	}
	return key
}

// AsProcessWithoutReplicas runs fn as a process none of whose repositories
// has replicas would (its writes read no position), and, with
// recordUnknown false, with the rule off: such writes record no position.
// Not for parallel tests: the state is the process's.
func AsProcessWithoutReplicas(recordUnknown bool, fn func()) {
	was := replicasInUse.Swap(false)
	unrecordedKnown.Store(!recordUnknown)
	defer func() {
		replicasInUse.Store(was)
		unrecordedKnown.Store(false)
	}()
	fn()
}
