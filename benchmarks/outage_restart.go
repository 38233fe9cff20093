package benchmarks

import (
	"context"
	"time"
)

// runOutageRestart stops the service's processes (their Kits closed, the
// Invalidators stopped with the slot kept), changes every fourth row with
// plain SQL, starts new processes and at once has every process read
// every changed row: a read older than the change is stale. With gate,
// every process runs an Invalidator, whose recovery gate keeps its reads
// off the cache until it caught up to the position at start (no call
// needed before serving); without, the Invalidator runs in a sidecar
// process that starts after the reads.
func runOutageRestart(ctx context.Context, env *Env, p OutageParams, gate bool) (Row, error) {
	row := Row{Variant: "restart", Notes: "processes stopped, rows changed with plain SQL, processes started with an Invalidator each, reading at once"}
	sub := "outage-restart"
	if !gate {
		row.Variant, row.Notes = "restart/no_gate", "the same with the Invalidator in a sidecar started after the reads: the recovery gate's effect"
		sub += "-no-gate"
	}
	if err := seedOutageRows(ctx, env, p.Rows); err != nil {
		return row, err
	}
	addr, ns, slot := env.RedisAddrs[0], env.Sub(sub), "asidebench_"+randomHex(6)
	var cdcs *outageCDCs
	defer func() {
		if cdcs != nil {
			cdcs.drop(ctx) // the last started: stopped and the slot dropped
		}
	}()
	open := func() ([]*outageProc, func(), error) {
		procs := make([]*outageProc, 0, p.Instances)
		stop := func() {
			for _, pr := range procs {
				pr.close()
			}
		}
		for range p.Instances {
			pr, err := openOutageProc(ctx, env, addr, ns, true, p.Rows)
			if err != nil {
				stop()
				return nil, nil, err
			}
			procs = append(procs, pr)
		}
		return procs, stop, nil
	}

	// The service runs and caches every row, then stops.
	procs, stop, err := open()
	if err != nil {
		return row, err
	}
	if cdcs, err = startOutageCDCs(ctx, env, procs, addr, ns, slot, p.Rows, true, gate); err == nil {
		if err = procs[0].items.WarmFilter(ctx); err == nil {
			if _, err = waitServing(ctx, procs); err == nil {
				err = warmOutage(ctx, procs, p.Rows)
			}
		}
	}
	if err != nil {
		stop()
		return row, err
	}
	cdcs.stop()
	stop()

	// While it is down, another program changes rows.
	var changed []outageItem
	err = env.DB.WithContext(ctx).Raw("UPDATE asidebench_outage_items SET version = version + 1 WHERE id % 4 = 0 RETURNING id, version").
		Scan(&changed).Error
	if err != nil {
		return row, err
	}

	// It starts again and at once reads every changed row from every
	// process; without gate, the sidecar's Invalidator starts after.
	t := time.Now()
	if procs, stop, err = open(); err != nil {
		return row, err
	}
	defer stop()
	if gate {
		if cdcs, err = startOutageCDCs(ctx, env, procs, addr, ns, slot, p.Rows, false, true); err != nil {
			return row, err
		}
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
	if !gate {
		if cdcs, err = startOutageCDCs(ctx, env, procs, addr, ns, slot, p.Rows, false, false); err != nil {
			return row, err
		}
	}
	// catch_up_ms: start → every process's reads use the cache again.
	if _, err := waitServing(ctx, procs); err != nil {
		return row, err
	}
	row.Set(MetricCatchUp, float64(time.Since(t).Milliseconds()))
	row.Set(MetricChangedRows, float64(len(changed)))
	row.Set(MetricStaleAfterStart, float64(stale))
	return row, nil
}
