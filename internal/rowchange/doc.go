// Package rowchange is the bridge between package repo and package
// repo/cdc: the shape of a committed row change as the write-ahead log
// carries it, and the Source a *repo.Repository embeds to hand cdc its
// table without a method of its own in repo's API (no process-wide
// registry). It imports
// neither of them, nor cacheaside: the cache work a change queues is
// cacheaside's Effects.
//
// What a change does to the cache is decided in one place, package repo's
// plan; this package only carries it.
package rowchange
