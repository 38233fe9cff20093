package benchmarks

import (
	"context"
	"fmt"
	"time"
)

// hotID is the breakdown scenario's hot key.
const hotID = 1

// RunBreakdown caches one hot key with a lifetime of p.TTL and reads it
// from p.Instances × p.Goroutines goroutines for p.Duration, while every DB
// query takes at least p.LoadDelay. The DB loads of the run fall into
// bursts, one per expiry: loads whose [start, end] overlap belong to one
// burst (concurrent rebuilds of the key are one stampede; sequential
// refreshes are one each). Rows report db_loads, expiries (the bursts),
// db_loads_per_expiry, errors, p50/p99/max latency over every read, and
// burst_p99_ms: the p99 latency of the reads in flight during a burst
// (from its first load's start to its last load's end), which are the
// reads that found the key missing or being rebuilt. p99_ms mixes them
// with the hits around them and stays below the rebuild cost; burst_p99_ms
// shows what a burst costs its readers.
func RunBreakdown(ctx context.Context, env *Env, p BreakdownParams, variants []Variant) (Result, error) {
	res := Result{Scenario: "breakdown", Backend: env.Backend, Params: paramsMap(p)}
	if err := env.ensureUsers(ctx, hotID); err != nil {
		return res, err
	}
	for _, v := range variants {
		row, err := runBreakdownVariant(ctx, env, p, v)
		if err != nil {
			return res, fmt.Errorf("breakdown: %s: %w", v.Name, err)
		}
		res.Rows = append(res.Rows, row)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("every DB query made to take %v (a GORM callback), standing for the hot key's rebuild cost", p.LoadDelay))
	return res, nil
}

func runBreakdownVariant(ctx context.Context, env *Env, p BreakdownParams, v Variant) (Row, error) {
	row := Row{Variant: v.Name, Notes: v.Notes}
	subs, cleanup, err := env.instances(v, "", "breakdown", p.Instances, p.TTL, nil, nil)
	if err != nil {
		return row, err
	}
	defer cleanup()
	env.dbc.delay.Store(int64(p.LoadDelay))
	defer env.dbc.delay.Store(0)
	if _, err := subs[0].Get(ctx, hotID); err != nil {
		return row, fmt.Errorf("warm-up: %w", err)
	}
	rec := &recorder{}
	env.dbc.rec.Store(rec)
	before := env.Counts()
	t0 := time.Now()
	stop := env.trackTime("breakdown "+v.Name, p.Duration)
	o := drive(ctx, subs, p.Load, until(t0.Add(p.Duration), func(int) int64 { return hotID }), nil)
	stop()
	// A background refresh may still be loading when the readers stop:
	// let it finish, so that every load counted also ends in a burst (a
	// load counted at its start but recorded at its end would otherwise
	// show as a load without an expiry).
	drainLoads(ctx, &env.dbc, 2*p.LoadDelay+5*time.Second)
	env.dbc.rec.Store(nil)
	after := env.Counts()
	if err := ctx.Err(); err != nil {
		return row, err
	}
	spans := rec.snapshot()
	loads := len(spans)
	windows := bursts(spans)
	exp := len(windows)
	row.Set(MetricDBLoads, float64(loads))
	row.Set(MetricExpiries, float64(exp))
	perExpiry := 0.0
	if exp > 0 {
		perExpiry = float64(loads) / float64(exp)
	}
	row.Set(MetricDBLoadsPerExpiry, perExpiry)
	o.fill(&row)
	row.Set(MetricBurstP99, ms(quantile(o.lat.during(windows), 0.99)))
	row.Set(MetricRedisRoundTrips, float64(after.RedisRoundTrips-before.RedisRoundTrips))
	return row, nil
}

// drainLoads waits, at most bound, until no DB statement is running.
func drainLoads(ctx context.Context, c *dbCounter, bound time.Duration) {
	deadline := time.Now().Add(bound)
	for c.inflight.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
}
