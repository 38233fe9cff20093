package benchmarks

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// RunPenetration reads p.AbsentIDs ids that exist nowhere, p.Reads times
// in all, through each variant: p.Instances processes × p.Goroutines
// goroutines. The ids are read in whole passes of one shuffled order, so
// every id is read Reads/AbsentIDs times and two reads of one id are
// AbsentIDs reads apart. Rows report db_loads (SQL statements during the
// reads), db_loads_per_distinct_id, requests, errors and latencies. Users
// rows 1..p.Rows exist; the absent ids lie far above them.
func RunPenetration(ctx context.Context, env *Env, p PenetrationParams, variants []Variant) (Result, error) {
	p.AbsentIDs = max(p.AbsentIDs, 1)
	passes := max((p.Reads+p.AbsentIDs-1)/p.AbsentIDs, 1)
	p.Reads = passes * p.AbsentIDs
	res := Result{Scenario: "penetration", Backend: env.Backend, Params: paramsMap(p)}
	if err := env.ensureUsers(ctx, p.Rows); err != nil {
		return res, err
	}
	absent := make([]int64, p.AbsentIDs)
	for i := range absent {
		absent[i] = int64(p.Rows) + 1_000_000 + int64(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(absent), func(i, j int) { absent[i], absent[j] = absent[j], absent[i] })
	reads := make([]int64, 0, p.Reads)
	for i := 0; i < passes; i++ {
		reads = append(reads, absent...)
	}
	for _, v := range variants {
		subs, cleanup, err := env.instances(v, "", "penetration", p.Instances, 10*time.Minute, nil, nil)
		if err != nil {
			return res, fmt.Errorf("penetration: %w", err)
		}
		tr := env.track("penetration "+v.Name, int64(len(reads)))
		before := env.Counts()
		o := drive(ctx, subs, p.Load, sequence(reads), tr)
		after := env.Counts()
		tr.Done()
		cleanup()
		if err := ctx.Err(); err != nil {
			return res, err
		}
		row := Row{Variant: v.Name, Notes: v.Notes}
		loads := after.DBStatements - before.DBStatements
		row.Set(MetricDBLoads, float64(loads))
		row.Set("db_loads_per_distinct_id", float64(loads)/float64(p.AbsentIDs))
		o.fill(&row)
		row.Set("not_found", float64(o.notFound.Load()))
		row.Set(MetricRedisRoundTrips, float64(after.RedisRoundTrips-before.RedisRoundTrips))
		res.Rows = append(res.Rows, row)
		if e := o.firstErr.Load(); e != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: first error: %v", v.Name, *e))
		}
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%d distinct absent ids, each read %d times", p.AbsentIDs, passes))
	return res, nil
}
