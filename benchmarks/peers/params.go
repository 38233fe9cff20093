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
// (two expiries), and two rounds.
func QuickParams() Params {
	b := benchmarks.QuickParams()
	p := Params{Hit: b.Hit, Penetration: b.Penetration, Breakdown: b.Breakdown, Rounds: 2}
	p.Breakdown.TTL = breakdownTTL
	p.Breakdown.Duration = 6500 * time.Millisecond
	return p
}

// DefaultParams are benchmarks.DefaultParams, with the breakdown at a 3 s
// TTL read for 12.5 s (four expiries), and three rounds.
func DefaultParams() Params {
	b := benchmarks.DefaultParams()
	p := Params{Hit: b.Hit, Penetration: b.Penetration, Breakdown: b.Breakdown, Rounds: 3}
	p.Breakdown.TTL = breakdownTTL
	p.Breakdown.Duration = 12500 * time.Millisecond
	return p
}

func (p Params) rounds() int {
	if p.Rounds <= 0 {
		return 3
	}
	return p.Rounds
}
