// Package chaos checks asidekit's promises on recorded histories under
// injected faults, the way Jepsen and etcd's robustness tests do.
//
// A run starts N simulated processes in one OS process. Each has its own
// go-redis clients, cacheaside Cache, repo Repositories, lock Locker,
// limiter and seqgen Generator, and reaches every server through TCP fault
// proxies of its own:
//
//	process i ──proxy──> cache Redis   (a private redis-server, killed and restarted empty)
//	          ──proxy──> guard Redis   (a private redis-server for locks and limiters)
//	          ──proxy──> PostgreSQL    (the run's own database)
//
// The repositories of the main run have Bloom filters
// (repo.Options.Filter): one over ids, one over the rows' unique slugs,
// which GetBy reads by; each rebuilds itself from the table when it finds
// its keys lost (the cache Redis restarted empty).
//
// A schedule drawn from the seed cuts, stalls and slows those links, drops
// PostgreSQL's reply to a COMMIT that reached the server, kills the cache
// Redis and restarts it empty, and terminates the run's database
// connections. Meanwhile M goroutines per process call Get, GetMany, GetBy,
// Create, Update, Put and Delete through repo on rows with a monotonic version
// column, hold a lock and write under its fence, take serial numbers and
// ask a rate limiter; unless Config.NoLists, two more list the rows of a group
// through a cached query (repo.NewQuery) and move, create and delete rows
// (lists.go). Every operation is recorded with its start and end on
// one monotonic clock, and with its result.
//
// When the schedule ends the faults are healed and the checkers read the
// history:
//
//   - reads: no read returns a version older than the newest write that
//     completed (returned nil) before the read began; a write that returned
//     an error may or may not have been applied, and binds no read;
//   - converge: once writes stop, the cache holds what the table holds, for
//     every key (keys whose last write's outcome is unknown are invalidated
//     first, standing in for repo/cdc);
//   - inspector: repo's Inspect, run then on every repository of one
//     process, reports exactly the keys the converge check found divergent
//     (its counts are in a note);
//   - lock: no two holders whose fenced writes were both accepted held the
//     lock at overlapping times, and the fenced register's history is
//     linearizable (porcupine);
//   - seqgen: no serial issued twice, none above the database's mark;
//   - limiter: no interval shorter than the window saw more allowed calls
//     than the limit;
//   - loads: one database load per expiry of a hot key across all processes
//     for Mutex, AsyncRefresh and EarlyRefresh, at most one per process for
//     SingleFlight;
//   - lists: a list read has every row that a write completed before it
//     began put in its group, none that one took out, in the query's
//     order (check_lists.go says what a write of unknown outcome allows);
//   - recovery: a write that committed but whose invalidation failed
//     (repo.ErrAfterCommit) binds every later read of the process that made
//     it, during a Redis fault and after its heal (check_recovery.go);
//   - Redis restarted empty (Bloom): no read (Get, GetMany, GetBy) finds a
//     row absent when a Create or Put of it (the seed included) returned
//     nil before the read began, unless a Delete of it began before the
//     read ended, whatever that Delete's outcome (check_notfound.go): the
//     filters, whose keys each restart of the cache Redis wipes, must
//     answer "maybe" until rebuilt, never "absent" wrongly. The row counts
//     the reads, the wrong "not found"s (by id and by slug; those on a row
//     with a write of unknown outcome are told apart, not excused), and
//     the filters' untrusted checks and automatic rebuilds;
//   - failover: after the main run, a phase of its own on a private
//     3-master + 3-replica Redis Cluster from PATH (failover.go): the
//     workload on rows of its own with cacheaside.Options.ReplicaAcks 1,
//     a master's replica cut off, the master killed and the replica
//     promoted; its history is checked by the reads and recovery checks;
//   - replica: then a phase of its own on a private PostgreSQL primary and
//     streaming replica from PATH, 200 ms behind (replica.go): every
//     process's repository loads its misses from the replica, through
//     dbresolver or repo.Options.ReadDB, while the workload runs on rows of
//     its own and the seed's faults change the apply delay (0, 300 ms,
//     1 s), pause the replay (writes and reads of other processes right
//     then) and cut a process's link to the replica (its loads go to the
//     primary), and, every seed, two combinations with the cache Redis
//     (replica_combo.go): the replay paused, rows written (nil) and then
//     the cache Redis links cut, of every process or of one, or the cache
//     Redis killed and restarted empty, while every row is updated through
//     one process and read at once through all of them, the writer first
//     (a load that cannot read the position it must see goes to the
//     primary, never to the lagging replica); its history is checked by
//     the reads and recovery checks, in two rows: outside and inside the
//     combinations' windows ("replica × cache Redis") (with the
//     replay-position check off, testswitch.ReplicaLSNOff, it fails);
//   - CDC: last, a phase of its own on a private PostgreSQL with
//     wal_level=logical from PATH (cdc.go): a table with an integer group,
//     a timestamptz time, an integer rank, a soft-delete column and a
//     version, two cached queries by group (newest time first; by rank),
//     a write-through repository and an Invalidator per process on one
//     slot (the first holds it, the others stand by). Plain-SQL INSERT,
//     UPDATE (moves, new times and ranks), soft delete, undelete and
//     DELETE, each ended when its process's Invalidator applied it
//     (pg_current_wal_lsn, then Wait); write-through Update and Put; and
//     pairs of a write-through Update (through a process whose cache link
//     is slowed) and a plain-SQL UPDATE of the same row at once, while
//     every process Gets and lists. Two rows (cdc_check.go): "lists × CDC"
//     (no list read misses a row a binding write put in its group, keeps
//     one taken out or soft-deleted, or lists settled rows out of order;
//     the Invalidators skipped and left undecoded no change; with the
//     Invalidators' list upkeep off, testswitch.CDCListsOff, it fails) and
//     "write-through × CDC" (no Get older than a binding write; with the
//     write-through store compared with the version it finds just before
//     it, testswitch.FillCompareOff, it fails).
//
// A violation writes the operations around it, the faults and the seed to a
// file; the same seed replays the same fault schedule and the same choices
// of operations (their interleaving depends on the machine).
package chaos
