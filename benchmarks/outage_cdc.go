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
