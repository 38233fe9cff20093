package benchmarks

import (
	"context"
	"fmt"
	"time"

	"gorm.io/driver/postgres"

	"github.com/asidekit/asidekit/repo/cdc"
)

// seedOutageRows leaves exactly rows 1..n in the scenario's table, at
// version 1 (a sub-run starts on its own namespace, so no cache entry of
// an earlier one is read).
func seedOutageRows(ctx context.Context, env *Env, n int) error {
	db := env.DB.WithContext(ctx)
	if err := db.Exec("DELETE FROM asidebench_outage_items").Error; err != nil {
		return err
	}
	return db.Exec("INSERT INTO asidebench_outage_items (id, version, name) SELECT i, 1, 'item ' || i FROM generate_series(1, ?::bigint) i", n).Error
}

// outageCDC is a repo/cdc Invalidator running in one process.
type outageCDC struct {
	inv  *cdc.Invalidator
	stop func() // stops Run and waits for it
}

// startOutageCDC starts an Invalidator on slot for p's repository, as the
// process would at start (New, Register, go Run). With active it returns
// once the Invalidator holds the slot.
func startOutageCDC(ctx context.Context, env *Env, p *outageProc, slot string, active bool) (*outageCDC, error) {
	dsn := env.DB.Dialector.(*postgres.Dialector).Config.DSN
	inv, err := cdc.New(dsn, &cdc.Options{Slot: slot, StandbyRetry: 100 * time.Millisecond})
	if err != nil {
		return nil, err
	}
	if err := inv.Register(p.items); err != nil {
		return nil, err
	}
	if err := inv.Setup(ctx); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = inv.Run(rctx) }()
	c := &outageCDC{inv: inv, stop: func() { cancel(); <-done }}
	// Polled: Stats is the only sign that Run took the slot.
	for deadline := time.Now().Add(time.Minute); active && !inv.Stats().Active; {
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("the Invalidator did not take the slot: %v", inv.Stats().LastError)
		}
		time.Sleep(time.Millisecond)
	}
	return c, nil
}

// drop stops the Invalidator and drops its slot (retried while the
// stopped walsender exits).
func (c *outageCDC) drop(ctx context.Context) {
	c.stop()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	for c.inv.Drop(dctx) != nil && dctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
}

// outageCDCs are the service's Invalidators on one slot.
type outageCDCs struct {
	cdcs    []*outageCDC
	sidecar *outageProc // the process the Invalidator runs in without gate
}

// startOutageCDCs starts the service's Invalidators on slot. With gate,
// one runs in every process, as docs/outages.md says (the first holds the slot, the
// others stand by, and each holds its process's reads off the cache after
// a Redis failure until it caught up); without, one runs in a process of
// its own (sidecar), so that the processes that serve reads have no
// recovery gate: the rule's effect. With active it returns once the slot
// is held.
func startOutageCDCs(ctx context.Context, env *Env, procs []*outageProc, addr, ns, slot string, rows int, active, gate bool) (*outageCDCs, error) {
	s := &outageCDCs{}
	runners := procs
	if !gate {
		pr, err := openOutageProc(ctx, env, addr, ns, true, rows)
		if err != nil {
			return nil, err
		}
		s.sidecar, runners = pr, []*outageProc{pr}
	}
	for i, pr := range runners {
		c, err := startOutageCDC(ctx, env, pr, slot, active && i == 0)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.cdcs = append(s.cdcs, c)
	}
	return s, nil
}

// stop stops the Invalidators (and the sidecar), keeping the slot.
func (s *outageCDCs) stop() {
	for i := len(s.cdcs) - 1; i >= 0; i-- {
		s.cdcs[i].stop()
	}
	if s.sidecar != nil {
		s.sidecar.close()
		s.sidecar = nil
	}
}

// drop stops them and drops the slot.
func (s *outageCDCs) drop(ctx context.Context) {
	s.stop()
	if len(s.cdcs) > 0 {
		s.cdcs[0].drop(ctx) // its stop again is a no-op wait
	}
}

// waitServing waits until every process's reads use the cache again (no
// recovery gate holds them); it returns how long that took.
func waitServing(ctx context.Context, procs []*outageProc) (time.Duration, error) {
	t := time.Now()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, pr := range procs {
		if err := pr.kit.Cache().WaitRecovered(ctx); err != nil {
			return 0, fmt.Errorf("recovery gate: %w", err)
		}
	}
	return time.Since(t), nil
}
