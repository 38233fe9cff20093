// Package bloom is a Bloom filter kept in Redis bitmaps, shared by every
// process that opens it by name: "definitely absent" answers that let a
// cache turn away requests for ids that exist nowhere (cache penetration)
// without asking the database.
//
// # Sizing
//
// New(client, name, &Options{Capacity: n, FalsePositiveRate: p}) computes
// m = −n·ln p / (ln 2)² bits and k = round(m/n · ln 2) hash functions, and
// splits the m bits over Shards Redis strings (by default as many 8 MiB
// shards as needed; never more than Redis's 512 MB per string).
//
// # Hashing
//
// An element is hashed once with MurmurHash3 x64 128 (seed 0, written out
// in this package and pinned by tests, so a filter written by one version
// reads the same in the next). The 128 bits choose the element's shard and,
// by enhanced double hashing, its k bit offsets inside that shard; see
// hash.go. All k bits of an element are in one shard, so Add and
// MightContain are one script call and one round trip, and AddMany and
// MightContainMany group elements by shard into pipelined script calls.
//
// # Keys
//
// Shard s of filter "user" in namespace "ak" has three keys sharing the
// hash tag {user:s}:
//
//	ak:bf:{user:s}:meta   hash: layout fingerprint, gen, rebuild token
//	ak:bf:{user:s}:0      bitmap of the shard's even generations
//	ak:bf:{user:s}:1      bitmap of the shard's odd generations
//
// This is DESIGN.md's ak:bf:user:g:s with the generation reduced to its
// parity and the shard moved into a hash tag: every script touches the
// three keys of one shard only, which share a Cluster slot, while
// different shards spread over the slots. The name is escaped (internal/keys).
//
// With Options.Source the filter has one more key while an automatic
// rebuild runs, its lease (a string with a TTL, used alone, so its own
// hash tag):
//
//	ak:bf:{user}:lease
//
// # Generations and Rebuild
//
// The meta hash of each shard holds the shard's current generation g;
// readers read bitmap g mod 2. The query script reads g and the bits in
// one atomic step, so MightContain stays one round trip and always sees
// one whole generation. Rebuild(ctx, source):
//
//  1. begin, on every shard: delete bitmap (g+1) mod 2 and store a random
//     rebuild token in meta. From then on every Add sets its bits in both
//     bitmaps, so nothing added during the rebuild is lost.
//  2. fill: the source's keys are written to bitmap (g+1) mod 2 by a script
//     that first checks the token is still the shard's.
//  3. switch, on every shard: if the token is still the shard's, set the
//     completeness marker in bitmap (g+1) mod 2 (see below), set gen to
//     g+1, drop the token and UNLINK the old bitmap, in one script.
//
// A shard switches only after every source key is in its new bitmap, and
// an element is only ever read from its one shard, so no source key reads
// as absent at any moment, although shards switch one after another. A
// newer Rebuild takes the shards over (its begin replaces the token and
// clears the half-filled bitmap): the older one gets ErrRebuildSuperseded
// on its next fill or switch and stops. A failed or panicking rebuild
// aborts: shards not yet switched drop the token and the next bitmap and
// keep serving their current generation.
//
// # Trust: "maybe" until known complete
//
// A Bloom filter may answer "maybe" wrongly, never "absent" wrongly. Bits
// that are missing from Redis would do the latter: a filter never filled,
// or whose keys were lost (a Redis restarted without persistence, a
// FLUSHALL, an evicted key, a failover to a replica that lacked them, a
// Delete), reads "absent" for keys that exist. So a shard is trusted only
// while it is known complete: its meta hash exists and its current bitmap
// carries the completeness marker, one bit right after the shard's element
// bits, which only a Rebuild's switch sets, once every key of its source
// is in. The marker lives in the bitmap it vouches for, so losing the
// bitmap loses the marker; losing the meta hash distrusts the shard too.
// The query script reads the marker with the bits, in the same step, and
// a check answers "maybe" (true) for every key of an untrusted shard.
// Shards are trusted one by one: losing one shard's keys costs "maybe"
// for that shard's keys only.
//
// Add and AddMany never make a shard trusted, however many keys they add
// (they cannot know they were given all of them), and never distrust one.
// A new filter is therefore untrusted until its first Rebuild: fill a
// filter with Rebuild, not with AddMany. Ready reports whether every shard
// is trusted; Stats counts the untrusted shards (UntrustedShards) and the
// answers they turned into "maybe" (UntrustedChecks).
//
// Distrust takes the trust away on purpose: a caller that knows a key may
// have entered the source without being added (an insert whose generated
// key was lost with the database's reply) drops every shard's marker, and
// supersedes a rebuild under way, so that checks answer "maybe" until the
// next Rebuild reads the source again.
//
// With Options.Source (the full set of keys, e.g. every id of a table),
// the filter repairs itself: a check or Ready that meets an untrusted
// shard starts Rebuild(ctx, Source) in the background and returns at
// once, "maybe" meanwhile. One process rebuilds: it holds the lease
// ak:bf:{name}:lease (SET NX PX RebuildLease), renews it every third of
// RebuildLease and releases it when done or failed; the others find the
// lease held and keep answering "maybe", and if the holder dies another
// process takes over once the lease expires. A Filter runs at most one
// automatic rebuild at a time, and starts at most one per RebuildInterval
// whatever became of the previous one, so a failing Source is retried by
// a later check, not in a loop. Adds during it reach both generations, as
// in any Rebuild, so no key written meanwhile is lost. Close stops it.
//
// Trust is about keys that are gone, not about old copies: a Redis that
// restarts from an older snapshot, or a promoted replica that missed the
// latest SETBITs, keeps its marker and misses the bits of the writes it
// lost; only a Rebuild repairs that (see Operating it).
//
// # Operating it
//
// Bloom keys carry no TTL and should not be evicted: with an allkeys-*
// maxmemory-policy, an evicted bitmap or meta hash distrusts its shard,
// which then answers "maybe" (every check of it goes to the database)
// until a Rebuild; with Options.Source that rebuild starts by itself. Use
// noeviction or a volatile-* policy, or a separate Redis. After a failover,
// bits set by writes the replica had not received are lost while the
// marker may survive: those keys read as absent until a Rebuild from the
// database, which an operator should run after a failover (or restore
// from an older snapshot) of the filter's Redis.
//
// Filters written before the completeness marker existed have none: they
// are untrusted, answering "maybe", until their first Rebuild under this
// version (automatic with Options.Source). Processes of both versions may
// share a filter meanwhile; the older ones ignore the marker.
//
// Every process must open a filter with the same sizing (Capacity,
// FalsePositiveRate, Shards): it is stored in each shard's meta, and a
// Filter with another sizing gets ErrLayoutMismatch instead of wrong
// answers. To resize, open a Filter under a new name, Rebuild it from the
// database, move readers and writers to it, then Delete the old one
// (deleting first would answer "maybe" for everything meanwhile, sending
// every read to the database).
package bloom
