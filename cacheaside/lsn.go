package cacheaside

import (
	"context"
	"fmt"
	"strconv"
	"strings"
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

// RequiredLSN returns, in a loader called for a miss, the highest write
// position recorded on the versions of the ids it loads (see WithWriteLSN),
// or 0 when none is: a load that sees at least that position sees every
// write whose invalidation this cache recorded.
func RequiredLSN(ctx context.Context) uint64 {
	lsn, _ := ctx.Value(requiredLSNKey{}).(uint64)
	return lsn
}

// lsnArg is write.lua's position argument: lsn as 16 hex digits, or ""
// for 0 (none).
func lsnArg(lsn uint64) string {
	if lsn == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", lsn)
}

// tokenLSN returns the position a version token records, or 0.
func tokenLSN(ver string) uint64 {
	i := strings.LastIndexByte(ver, '@')
	if i < 0 {
		return 0
	}
	lsn, err := strconv.ParseUint(ver[i+1:], 16, 64)
	if err != nil {
		return 0
	}
	return lsn
}

// withRequired returns ctx for the loader of an id whose version is ver:
// carrying the position it records, if any.
func withRequired(ctx context.Context, ver string) context.Context {
	if lsn := tokenLSN(ver); lsn != 0 {
		return context.WithValue(ctx, requiredLSNKey{}, lsn)
	}
	return ctx
}

func maxLSN(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// withRequiredItems is withRequired for the versions of items.
func withRequiredItems(ctx context.Context, items []item) context.Context {
	var max uint64
	for _, it := range items {
		max = maxLSN(max, tokenLSN(it.ver))
	}
	if max == 0 {
		return ctx
	}
	return context.WithValue(ctx, requiredLSNKey{}, max)
}
