package peers

import (
	"context"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

// The fleet-shape scenarios: hot_key, outside_write and library_delete over
// several processes and a Zipf keyspace (FleetHotKey, FleetOutsideWrite),
// beside the few-keys shape of the same workloads.
const (
	HotKeyFleet        = "hot_key_fleet"
	OutsideWriteFleet  = "outside_write_fleet"
	LibraryDelete      = "library_delete"
	LibraryDeleteFleet = "library_delete_fleet"
)

// RefLibraryDelete is asidekit with a near cache in library_delete:
// vs_asidekit is invalidation_max_ms over its.
const RefLibraryDelete = "asidekit/local"

// DefaultFleetKeySpace and DefaultFleetZipf are the fleet shape's
// keyspace: 10,000 keys (every one fits each library's local tier: asidekit's
// Local.MaxEntries and go-redis/cache's TinyLFU hold 10,000 entries,
// jetcache-go's FreeCache 64 MB) drawn from Zipf(1.1), as asidebench skew.
const (
	DefaultFleetKeySpace = 10_000
	DefaultFleetZipf     = 1.1
)

// DefaultFleetWindow is the fleet outside writes' window: a read of a
// key begun more than 100ms after a write of it returned must answer the
// new version (asidebench skew's window).
const DefaultFleetWindow = 100 * time.Millisecond

// fleetHotKey is hot_key at fleet shape: 4 processes × 4 goroutines over
// the fleet keyspace, each variant read for d.
func fleetHotKey(d time.Duration) benchmarks.HotKeyParams {
	return benchmarks.HotKeyParams{Load: benchmarks.Load{Instances: 4, Goroutines: 4}, KeySpace: DefaultFleetKeySpace,
		Zipf: DefaultFleetZipf, ValueSize: 200, Duration: d}
}

// fleetOutsideWrite is outside_write (and library_delete) at fleet shape:
// 4 reader processes × 2 goroutines, each sweep 8 keys drawn from the
// fleet keyspace then a pause of 800µs, writes of keys drawn alike, local
// TTL 1 s, the window DefaultFleetWindow.
func fleetOutsideWrite(writes int, every time.Duration) benchmarks.LocalInvalidationParams {
	return benchmarks.LocalInvalidationParams{Load: benchmarks.Load{Instances: 4, Goroutines: 2}, Keys: 8,
		KeySpace: DefaultFleetKeySpace, Zipf: DefaultFleetZipf, Window: DefaultFleetWindow,
		Writes: writes, WriteEvery: every, ReadEvery: 800 * time.Microsecond, LocalTTL: time.Second, Tail: 2 * time.Second}
}

// CompareHotKeyFleet is CompareHotKey with p.HotKeyFleet: the result's
// scenario is hot_key_fleet.
func CompareHotKeyFleet(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	q := p
	q.HotKey = p.HotKeyFleet
	res, err := compareHotKey(ctx, env, q, progress, HotKeyFleet)
	res.Scenario = HotKeyFleet
	return res, err
}

// CompareOutsideWriteFleet is CompareOutsideWrite with
// p.OutsideWriteFleet: the result's scenario is outside_write_fleet.
func CompareOutsideWriteFleet(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	q := p
	q.OutsideWrite = p.OutsideWriteFleet
	res, err := compareOutside(ctx, env, q, progress, OutsideWriteFleet, RefOutsideWrite, benchmarks.RunOutsideWrite, OutsideWriteVariants)
	res.Scenario = OutsideWriteFleet
	return res, err
}

// CompareLibraryDelete runs benchmarks.RunLibraryDelete p.Rounds times
// over asidekit's OutsideWriteVariants and LibraryDeleteVariants, with
// p.OutsideWrite's sizes: the writer deletes through each library's own
// call. vs_asidekit is invalidation_max_ms over RefLibraryDelete's.
func CompareLibraryDelete(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	return compareOutside(ctx, env, p, progress, LibraryDelete, RefLibraryDelete, benchmarks.RunLibraryDelete, LibraryDeleteVariants)
}

// CompareLibraryDeleteFleet is CompareLibraryDelete with
// p.OutsideWriteFleet: the result's scenario is library_delete_fleet.
func CompareLibraryDeleteFleet(ctx context.Context, env *benchmarks.Env, p Params, progress Progress) (benchmarks.Result, error) {
	q := p
	q.OutsideWrite = p.OutsideWriteFleet
	res, err := compareOutside(ctx, env, q, progress, LibraryDeleteFleet, RefLibraryDelete, benchmarks.RunLibraryDelete, LibraryDeleteVariants)
	res.Scenario = LibraryDeleteFleet
	return res, err
}

// LibraryDeleteVariants are the peers whose writer deletes through the
// library's own call (their Subjects' Delete): go-zero DelCtx, rockscache
// TagAsDeleted2, jetcache-go Delete and go-redis/cache Delete, the last
// two remote only and with their local caches (entries living p.LocalTTL).
// A delete through jetcache-go or go-redis/cache drops the writer's own
// local entry only: no other process hears of it (jetcache-go's
// WithSyncLocal needs an event handler the user writes; not set up here).
func LibraryDeleteVariants(p benchmarks.LocalInvalidationParams) []benchmarks.Variant {
	return append([]benchmarks.Variant{
		{Name: GoZero, Notes: "TakeCtx; the writer calls DelCtx",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newGoZero(s, 0) }},
		{Name: Rockscache, Notes: "Fetch2 (weak consistency, the default); the writer calls TagAsDeleted2",
			New: func(s benchmarks.Setup) (benchmarks.Subject, error) { return newRocks(s, 0, false) }},
	}, OutsideWriteVariants(p)...)
}

// outsideSummaryHow names the change an outside scenario makes, for the
// summary lines.
func outsideSummaryHow(scenario string) string {
	switch scenario {
	case "outside_set":
		return "a plain SET"
	case LibraryDelete, LibraryDeleteFleet:
		return "the library's own delete"
	}
	return "a plain DEL"
}
