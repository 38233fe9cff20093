// Package rowchange is the bridge between package repo and package
// repo/cdc: the shape of a committed row change as the write-ahead log
// carries it, the batch of cache work (invalidations, Bloom filter adds)
// that changes queue, and the registry through which cdc finds the
// repository behind a *repo.Repository without a method in repo's API.
//
// What a change does to the cache is decided in one place, package repo's
// plan; this package only carries it.
package rowchange
