// Package rowchange is the bridge between package repo and package
// repo/cdc: the shape of a committed row change as the write-ahead log
// carries it, and the registry through which cdc finds what a
// *repo.Repository gives it without a method in repo's API. It imports
// neither of them, nor cacheaside: the cache work a change queues is
// cacheaside's Effects.
//
// What a change does to the cache is decided in one place, package repo's
// plan; this package only carries it.
package rowchange
