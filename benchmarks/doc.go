// Package benchmarks is the scenario harness behind the asidebench command:
// it runs the cache-failure workloads (hit, penetration, avalanche,
// breakdown, seqgen) against real or embedded backends, counts what reaches
// the database and Redis, and writes the results as tables, JSON and a
// Markdown report with charts.
//
// # Backends
//
// Open builds an Env: a Redis server or cluster (or an in-process miniredis
// whose TTLs follow the wall clock, advanced every 10 to 100 ms, so keys
// really expire), a database (a fresh PostgreSQL database created for the
// run and dropped by Close, or SQLite through a pure-Go driver in a
// temporary file), a Redis key namespace unique to the run (its keys are
// removed by Close with SCAN + UNLINK on a server; miniredis is stopped
// with them) and the counters:
//
//   - every SQL statement is counted by a GORM callback (DB loads), with
//     its start time and the number in flight;
//   - every Redis round trip (a command or a pipeline) is counted by a
//     go-redis hook on each client the Env hands out.
//
// Latencies on the embedded backend are not representative of a real
// deployment: miniredis and SQLite run in the benchmark's own process.
//
// # Cache implementations under test
//
// A workload reads through a Subject, one instance of a cache
// implementation as one process of a service would hold it. A Variant
// names a configuration and builds one Subject per simulated process from a
// Setup: that process's own Redis client, a namespace of its own, the
// shared Loader (the database read every implementation falls back to) and
// the scenario's TTL. RunHit, RunPenetration, RunAvalanche and
// RunBreakdown run the same workload over every variant, one after the
// other, and return a Result; RunSeqgen compares package seqgen with the
// database's own sequence. asidekit's own variants (built on packages repo
// and cacheaside, as a service uses them, over the sample schema's users)
// are returned by HitVariants, PenetrationVariants, AvalancheVariants and
// BreakdownVariants. A Subject maps its library's "absent" to ErrNotFound
// and its load shedding to ErrOverloaded; one that can cache many ids in one
// batch implements Warmer.
//
// The workloads, in short: hit reads warm keys from one goroutine against
// a bare GET + json.Unmarshal; penetration reads absent ids in whole passes;
// avalanche caches many keys at once and reads them at a steady rate (open
// loop) across their expiry, and its Outage variants cut a loopback proxy
// in front of Redis mid-run; breakdown hammers one hot key whose rebuild is
// made slow, and counts the DB loads of each burst of overlapping loads;
// local_invalidation (RunLocalInvalidation) measures how fast a write,
// through Entity.Set, through repo on the database or by a plain DEL,
// reaches the near caches of other processes; outage (RunOutage) runs a
// service's requests (a fail-open limiter, reads, writes and serial numbers
// through a Kit) while the processes' Redis link is cut, then stalled, and
// counts throughput, errors, duplicate serials and reads older than an
// acknowledged write, before and after the restore and after a restart;
// query (RunQuery) lists pages of Zipf-popular categories from N
// processes while 5% of the operations change rows, uncached, through
// TTL'd id lists, through repo.NewQuery and through repo.NewQuery with
// plain-SQL writes seen by repo/cdc, and judges each whole list read
// against the history of writes (stale_list_reads); replica (RunReplica)
// reads through repo from N processes whose loads dbresolver sends to a
// streaming replica 200 ms behind (started from PATH) while writers bump
// rows' versions, with the LSN check off and on, and counts stale fills,
// reads stale more than a second after a write and the primary's share of
// the loads.
// Two workloads serve other libraries' local tiers too: RunHotKey reads a
// few warm keys from concurrent callers (ops/s, p50/p99), and
// RunOutsideWrite deletes their Redis keys with a plain DEL from another
// client (a Subject names its keys through Keyed) and measures how long
// each keeps serving the old value;
// RunOutsideSet does the same with a plain SET of the new value in the
// library's own encoding (a Subject encodes through Encoder).
//
// Another module can run the same workloads against other cache libraries
// with a thin main:
//
//	env, err := benchmarks.Open(ctx, benchmarks.Config{RedisAddr: "127.0.0.1:6379", PostgresDSN: dsn})
//	if err != nil { ... }
//	defer env.Close()
//	p := benchmarks.QuickParams()
//	res, err := benchmarks.RunBreakdown(ctx, env, p.Breakdown, []benchmarks.Variant{{
//		Name: "mylib",
//		New: func(s benchmarks.Setup) (benchmarks.Subject, error) {
//			return newMyLibSubject(s.Client, s.Namespace, s.TTL, s.Load), nil
//		},
//	}})
//	if err != nil { ... }
//	benchmarks.WriteTable(os.Stdout, res)
//
// # Results
//
// A Result holds one row of metrics per variant. WriteTable prints it,
// WriteJSON writes {"scenario", "backend", "params", "results"} objects,
// and WriteReport writes report.md with PNG charts (DB loads over time for
// avalanche, latency percentiles for breakdown).
package benchmarks
