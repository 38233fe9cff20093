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
//  3. switch, on every shard: if the token is still the shard's, set gen to
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
// # Operating it
//
// Bloom keys carry no TTL and must not be evicted: with an allkeys-*
// maxmemory-policy, an evicted bitmap or meta hash reads as "absent" for
// keys that exist (false negatives, which a cache then answers as not
// found). Use noeviction or a volatile-* policy, or a separate Redis. After
// a failover, bits set by writes the replica had not received are lost the
// same way; a Rebuild from the database repairs both. Every process must
// open a filter with the same Options: the sizing is stored in each shard's
// meta, and a Filter with other sizing gets ErrLayoutMismatch instead of
// wrong answers. To resize, open a Filter under a new name, Rebuild it
// from the database, move readers and writers to it, then Delete the old
// one (deleting first would answer "absent" for everything meanwhile).
package bloom
