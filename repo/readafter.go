package repo

import (
	"context"
	"sync/atomic"
)

// Read-your-writes across requests and processes. A write's position
// (the primary's WAL position after its commit) can travel with the
// request that follows it: TrackWrites collects the positions of the
// writes made with its context, and ReadAfter makes the loads of reads
// made with a context see at least a position, whichever replica they
// would use. Cache hits need nothing more: a repository's write
// invalidates its ids before it returns, so an entry found afterwards was
// filled by a load that saw the write. For writes made outside the
// library, wait for repo/cdc's Wait(lsn) first.

type readAfterKey struct{}
type trackKey struct{}

// WriteToken collects the positions of writes (see TrackWrites). It is
// safe for concurrent use.
type WriteToken struct{ lsn atomic.Uint64 }

// LSN returns the highest position of the writes recorded, 0 when none
// was (or no repository has replicas: nothing needs it then), UnknownLSN
// when a write's position could not be read (ReadAfter with it loads from
// the primary).
func (t *WriteToken) LSN() uint64 { return t.lsn.Load() }

// TrackWrites returns a context whose repository writes (and
// Transactions) record the position of their commit in the token.
func TrackWrites(ctx context.Context) (context.Context, *WriteToken) {
	t := &WriteToken{}
	return context.WithValue(ctx, trackKey{}, t), t
}

// tracking reports whether ctx has a WriteToken.
func tracking(ctx context.Context) bool { return ctx.Value(trackKey{}) != nil }

func trackWrite(ctx context.Context, lsn uint64) {
	t, _ := ctx.Value(trackKey{}).(*WriteToken)
	if t == nil {
		return
	}
	for {
		old := t.lsn.Load()
		if old >= lsn || t.lsn.CompareAndSwap(old, lsn) {
			return
		}
	}
}

// ReadAfter returns ctx carrying position lsn (a WriteToken's): the loads
// of misses made with it run on a replica only when it has replayed lsn,
// else on the primary. lsn 0 asks nothing.
func ReadAfter(ctx context.Context, lsn uint64) context.Context {
	if lsn == 0 {
		return ctx
	}
	return context.WithValue(ctx, readAfterKey{}, lsn)
}

// tokenOf returns the position ctx carries from ReadAfter, or 0.
func tokenOf(ctx context.Context) uint64 {
	lsn, _ := ctx.Value(readAfterKey{}).(uint64)
	return lsn
}
