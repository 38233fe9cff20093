package benchmarks

import (
	"context"
	"time"
)

// runOutageRestart stops the service's processes (their Kits closed, the
// Invalidator stopped with its slot kept), changes every fourth row with
// plain SQL, starts new processes with the Invalidator registered and, with
// catchUp, its CatchUp before they serve, then has every process read
// every changed row: a read older than the change is stale.
func runOutageRestart(ctx context.Context, env *Env, p OutageParams, catchUp bool) (Row, error) {
	row := Row{Variant: "restart", Notes: "processes stopped, rows changed with plain SQL, processes started with cdc and CatchUp before reading"}
	sub := "outage-restart"
	if !catchUp {
		row.Variant, row.Notes = "restart/no_catch_up", "the same without CatchUp: the rule's effect"
		sub += "-no-catch-up"
	}
	if err := seedOutageRows(ctx, env, p.Rows); err != nil {
		return row, err
	}
	ns, slot := env.Sub(sub), "asidebench_"+randomHex(6)
	start := func(active bool) ([]*outageProc, *outageCDC, func(), error) {
		procs := make([]*outageProc, 0, p.Instances)
		var inv *outageCDC
		stop := func() {
			if inv != nil {
				inv.stop()
			}
			for _, pr := range procs {
				pr.close()
			}
		}
		for range p.Instances {
			pr, err := openOutageProc(ctx, env, env.RedisAddrs[0], ns, true, p.Rows)
			if err != nil {
				stop()
				return nil, nil, nil, err
			}
			procs = append(procs, pr)
		}
		var err error
		if inv, err = startOutageCDC(ctx, env, procs[0], slot, active); err != nil {
			stop()
			return nil, nil, nil, err
		}
		return procs, inv, stop, nil
	}

	// The service runs and caches every row, then stops.
	procs, inv, stop, err := start(true)
	if err != nil {
		return row, err
	}
	last := inv
	defer func() { last.drop(ctx) }() // the last Invalidator started: stopped (again) and its slot dropped
	if err := procs[0].items.WarmFilter(ctx); err != nil {
		stop()
		return row, err
	}
	if err := warmOutage(ctx, procs, p.Rows); err != nil {
		stop()
		return row, err
	}
	stop()

	// While it is down, another program changes rows.
	var changed []outageItem
	err = env.DB.WithContext(ctx).Raw("UPDATE asidebench_outage_items SET version = version + 1 WHERE id % 4 = 0 RETURNING id, version").
		Scan(&changed).Error
	if err != nil {
		return row, err
	}

	// It starts again and reads every changed row from every process.
	t := time.Now()
	procs, inv, stop, err = start(false)
	if err != nil {
		return row, err
	}
	last = inv
	defer stop()
	if catchUp {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := inv.inv.CatchUp(cctx)
		cancel()
		if err != nil {
			return row, err
		}
		row.Set(MetricCatchUp, float64(time.Since(t).Milliseconds()))
	}
	ids := make([]int64, len(changed))
	for i, c := range changed {
		ids[i] = c.ID
	}
	stale := 0
	for _, pr := range procs {
		got, err := pr.items.GetMany(ctx, ids)
		if err != nil {
			return row, err
		}
		for _, c := range changed {
			if got[c.ID].Version < c.Version {
				stale++
			}
		}
	}
	row.Set(MetricChangedRows, float64(len(changed)))
	row.Set(MetricStaleAfterStart, float64(stale))
	return row, nil
}
