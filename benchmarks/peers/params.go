package peers

import (
	"time"

	"github.com/asidekit/asidekit/benchmarks"
)

// Params size a comparison run.
type Params struct {
	// Hit, Penetration and Breakdown are asidebench's workload sizes.
	Hit         benchmarks.HitParams
	Penetration benchmarks.PenetrationParams
	Breakdown   benchmarks.BreakdownParams
	// HotKey sizes hot_key: a few warm keys read by concurrent callers.
	HotKey benchmarks.HotKeyParams
	// OutsideWrite sizes outside_write: processes reading hot keys that a
	// plain DEL from outside changes (Instances, Goroutines, Keys, Writes,
	// WriteEvery, ReadEvery, LocalTTL). ReadEvery is 800µs here, a pause
	// after each sweep of the keys: the rate of its former per-read pauses
	// (200µs over 4 keys, 100µs over 8).
	OutsideWrite benchmarks.LocalInvalidationParams
	// HotKeyFleet sizes hot_key_fleet: hot_key over 4 processes and a
	// Zipf keyspace (DefaultFleetKeySpace keys, DefaultFleetZipf).
	HotKeyFleet benchmarks.HotKeyParams
	// OutsideWriteFleet sizes outside_write_fleet and
	// library_delete_fleet: 4 reader processes over the same keyspace,
	// the writer's keys drawn alike, stale reads judged against
	// DefaultFleetWindow. (library_delete runs at OutsideWrite's sizes.)
	OutsideWriteFleet benchmarks.LocalInvalidationParams
	// Rounds is how many times each scenario runs, the variants' order
	// alternating between rounds. Default 3 when zero.
	Rounds int
}

// breakdownTTL is the hot key's lifetime in the comparison: whole seconds,
// because go-zero rounds TTLs up and rockscache truncates them to seconds,
// and long enough that jetcache-go's auto-refresh (at least one second)
// fits between two expiries. asidebench's own default is 2 s.
const breakdownTTL = 3 * time.Second

// QuickParams finish every scenario in a few minutes on a small machine:
// benchmarks.QuickParams, with the breakdown at a 3 s TTL read for 6.5 s
// (two expiries), hot_key and outside_write in under a minute together
// (1 s per hot_key variant; 20 outside writes, local TTL 1 s), their fleet
// shape at 1 s per hot_key variant and 40 writes, and two rounds.
func QuickParams() Params {
	b := benchmarks.QuickParams()
	p := Params{Hit: b.Hit, Penetration: b.Penetration, Breakdown: b.Breakdown, Rounds: 2}
	p.Breakdown.TTL = breakdownTTL
	p.Breakdown.Duration = 6500 * time.Millisecond
	p.HotKey = benchmarks.HotKeyParams{Load: benchmarks.Load{Instances: 1, Goroutines: 4}, Keys: 8, ValueSize: 200, Duration: time.Second}
	p.OutsideWrite = benchmarks.LocalInvalidationParams{Load: benchmarks.Load{Instances: 2, Goroutines: 2}, Keys: 4,
		Writes: 20, WriteEvery: 50 * time.Millisecond, ReadEvery: 800 * time.Microsecond, LocalTTL: time.Second, Tail: 2 * time.Second}
	p.HotKeyFleet = fleetHotKey(time.Second)
	p.OutsideWriteFleet = fleetOutsideWrite(40, 25*time.Millisecond)
	return p
}

// DefaultParams are benchmarks.DefaultParams, with the breakdown at a 3 s
// TTL read for 12.5 s (four expiries), the fleet shape at 3 s per hot_key
// variant and 100 writes one every 20 ms, and three rounds.
func DefaultParams() Params {
	b := benchmarks.DefaultParams()
	p := Params{Hit: b.Hit, Penetration: b.Penetration, Breakdown: b.Breakdown, Rounds: 3}
	p.Breakdown.TTL = breakdownTTL
	p.Breakdown.Duration = 12500 * time.Millisecond
	p.HotKey = benchmarks.HotKeyParams{Load: benchmarks.Load{Instances: 1, Goroutines: 8}, Keys: 8, ValueSize: 200, Duration: 3 * time.Second}
	p.OutsideWrite = benchmarks.LocalInvalidationParams{Load: benchmarks.Load{Instances: 4, Goroutines: 2}, Keys: 8,
		Writes: 100, WriteEvery: 20 * time.Millisecond, ReadEvery: 800 * time.Microsecond, LocalTTL: 5 * time.Second, Tail: 6 * time.Second}
	p.HotKeyFleet = fleetHotKey(3 * time.Second)
	p.OutsideWriteFleet = fleetOutsideWrite(100, 20*time.Millisecond)
	return p
}

func (p Params) rounds() int {
	if p.Rounds <= 0 {
		return 3
	}
	return p.Rounds
}
