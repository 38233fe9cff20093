package cacheaside

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// Write positions (LSNs). A database that serves reads from replicas
// needs a miss to know how new a load must be: a replica that has not
// replayed the write behind the last invalidation would load the old row
// and the fill would store it under the new version. So an invalidation
// (Invalidate or Set) made with a context from WithWriteLSN records that
// position in the id's version token ("<token>@<16 hex digits>"), and the
// version keeps the highest position any invalidation recorded (write.lua
// compares them), for as long as the version lives (VersionTTL). A loader
// called for a miss finds, with RequiredLSN, the highest position recorded
// on the ids it loads, and may route its load accordingly (repo does).
// Positions are opaque to this package: any number that grows with the
// writes of the source of truth (a PostgreSQL WAL position) will do.
//
// A position that could not be read is never taken for 0: RequiredLSN is
// UnknownLSN when the load runs without the cache (Redis failed, the
// breaker or the recovery gate is open, an invalidation is pending), when
// a version records UnknownLSN (its writer could not read its position),
// and when a version records no write at all: created by a miss, it may
// stand for a version Redis lost (a restart, a failover, an eviction)
// with the position of a write the load must see. A write over such a
// version keeps it unknown, whatever position the write records: a late
// one (the log's Invalidator applying a change older than a write that
// completed) would otherwise lower what the next miss requires below the
// lost version's. A loader that reads the source of truth itself may
// tell, with LSNRecorder, a position its read saw; the fill stores it in
// those versions, so the next misses of the ids know what to require
// again.

type writeLSNKey struct{}
type requiredLSNKey struct{}

// WithWriteLSN returns ctx carrying lsn, the position of the write behind
// an invalidation: Invalidate and Set called with it record lsn in the new
// version of every id they touch, and an invalidation retried in the
// background keeps it. lsn 0 records nothing.
func WithWriteLSN(ctx context.Context, lsn uint64) context.Context {
	if lsn == 0 {
		return ctx
	}
	return context.WithValue(ctx, writeLSNKey{}, lsn)
}

// writeLSN is the position ctx carries from WithWriteLSN, or 0.
func writeLSN(ctx context.Context) uint64 {
	lsn, _ := ctx.Value(writeLSNKey{}).(uint64)
	return lsn
}

// UnknownLSN is RequiredLSN's answer when the position a load must see
// could not be read: no copy that trails the source of truth may serve
// it. Recorded by a write (WithWriteLSN), it means the same: its
// position is unknown.
const UnknownLSN uint64 = math.MaxUint64

// requirement is what a loader called for a miss must see, carried by its
// context.
type requirement struct {
	lsn  uint64        // the highest position the versions record, or UnknownLSN
	seen atomic.Uint64 // a position the load saw (LSNRecorder), 0 for none
}

// RequiredLSN returns, in a loader called for a miss, the highest write
// position recorded on the versions of the ids it loads (see
// WithWriteLSN), 0 when they record none: a load that sees at least that
// position sees every write whose invalidation this cache recorded. It
// returns UnknownLSN when the position could not be read (see above), and
// outside a loader called by this package.
func RequiredLSN(ctx context.Context) uint64 {
	if rq, _ := ctx.Value(requiredLSNKey{}).(*requirement); rq != nil {
		return rq.lsn
	}
	return UnknownLSN
}

// LSNRecorder returns, in a loader whose RequiredLSN is UnknownLSN and
// whose values will be stored, a func to call with a position its load
// read at or past (read from the source of truth after the load began);
// the values are then stored with that position recorded in the versions
// that had none. It returns nil when nothing would record it.
func LSNRecorder(ctx context.Context) func(lsn uint64) {
	rq, _ := ctx.Value(requiredLSNKey{}).(*requirement)
	if rq == nil || rq.lsn != UnknownLSN {
		return nil
	}
	return func(lsn uint64) {
		if lsn != UnknownLSN && lsn > rq.seen.Load() {
			rq.seen.Store(lsn)
		}
	}
}

// lsnArg is write.lua's position argument: lsn as 16 hex digits, or ""
// for 0 (none).
func lsnArg(lsn uint64) string {
	if lsn == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", lsn)
}

// tokenLSN returns the position a version token records: 0 for a version
// written without one, UnknownLSN for a version created by a miss (no
// write or fill recorded a position since the version key began: see
// above) or that records UnknownLSN or "~" (what write.lua records for a
// write over such a version).
func tokenLSN(ver string) uint64 {
	i := strings.LastIndexByte(ver, '@')
	if i < 0 {
		if strings.IndexByte(ver, '#') < 0 {
			return UnknownLSN // created by version.lua or lease.lua
		}
		return 0
	}
	lsn, err := strconv.ParseUint(ver[i+1:], 16, 64)
	if err != nil {
		return UnknownLSN
	}
	return lsn
}

// withRequired returns ctx for the loader of an id whose version is ver.
func withRequired(ctx context.Context, ver string) (context.Context, *requirement) {
	rq := &requirement{lsn: tokenLSN(ver)}
	return context.WithValue(ctx, requiredLSNKey{}, rq), rq
}

// withRequiredItems is withRequired for the versions of items.
func withRequiredItems(ctx context.Context, items []item) (context.Context, *requirement) {
	rq := &requirement{}
	for _, it := range items {
		rq.lsn = max(rq.lsn, tokenLSN(it.ver))
	}
	return context.WithValue(ctx, requiredLSNKey{}, rq), rq
}

// upgrade returns the version fill.lua is to store with the value loaded
// for an id whose version was ver ("" to keep ver): ver with the position
// the load saw when ver records none.
func (rq *requirement) upgrade(ver string) string {
	seen := rq.seen.Load()
	if seen == 0 || tokenLSN(ver) != UnknownLSN {
		return ""
	}
	if i := strings.LastIndexByte(ver, '@'); i >= 0 {
		ver = ver[:i]
	}
	return ver + "@" + lsnArg(seen)
}

func maxLSN(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}
