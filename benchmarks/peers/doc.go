// Package peers runs asidebench's workloads (package benchmarks of
// github.com/asidekit/asidekit) against four other Go cache libraries, side
// by side with asidekit, on one Redis and one PostgreSQL:
//
//   - go-zero's core/stores/cache (v1.10.3): cache.Cache.TakeCtx;
//   - rockscache (v0.1.1): Client.Fetch2;
//   - jetcache-go (v1.2.6): Cache.Once, remote-only and with its local cache;
//   - go-redis/cache (v9.0.0): Cache.Once, without and with its local TinyLFU.
//
// It is a module of its own so that asidekit's users never download the
// peers. Each peer is set up the way its README recommends for the
// protection a scenario exercises; a protection a peer does not have (a
// Bloom filter, a rebuild shared across processes) is left out and the
// variant's notes say so.
//
// CompareHit, ComparePenetration and CompareBreakdown run asidekit's own
// variants (benchmarks.HitVariants, PenetrationVariants, BreakdownVariants)
// and the peers' over several rounds whose order alternates (A B … B A …),
// so that drift on a shared machine hits every variant alike, then fold the
// rounds into one benchmarks.Result with each row's ratio to asidekit
// (metric vs_asidekit). CompareHotKey, CompareOutsideWrite and
// CompareOutsideSet do the same
// for the near cache: asidekit with Policy.Local against jetcache-go and
// go-redis/cache with their local tiers (and all three remote only), on a
// few hot keys (benchmarks.RunHotKey), under plain DELs from another client
// (benchmarks.RunOutsideWrite) and under plain SETs of the new value in
// each library's encoding (benchmarks.RunOutsideSet). CompareLibraryDelete
// has the writer delete through each library's own call instead
// (benchmarks.RunLibraryDelete), and CompareHotKeyFleet,
// CompareOutsideWriteFleet and CompareLibraryDeleteFleet run the same
// workloads at fleet shape: 4 processes over a Zipf(1.1) keyspace, stale
// reads judged against a fixed window. The command asidepeers prints them
// with benchmarks.WriteTable and writes benchmarks.WriteJSON.
//
// Two Go benchmarks compare asidekit's guards with their usual
// alternatives: BenchmarkObtainRelease (guard/lock against bsm/redislock)
// and BenchmarkGCRA (guard/limit's GCRA against go-redis/redis_rate's),
// each side by side in one run. They are here rather than in those
// packages so that the library's go.mod requires neither.
package peers
