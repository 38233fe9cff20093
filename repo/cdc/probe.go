package cdc

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// probeServer reads the end of the server's WAL every StatusInterval, on
// its own connection, for Stats.LagBytes: the replication stream stops
// telling it while a transaction waits for Redis. It returns a function
// that stops the probe and waits for it.
func (inv *Invalidator) probeServer(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				_ = conn.Close(context.Background())
			}
		}()
		t := time.NewTicker(inv.o.StatusInterval)
		defer t.Stop()
		for {
			if conn == nil {
				conn, _ = pgx.Connect(ctx, inv.dsn)
			}
			if conn != nil {
				var end LSN
				qctx, qcancel := context.WithTimeout(ctx, inv.o.StatusInterval)
				err := conn.QueryRow(qctx, "SELECT pg_current_wal_lsn()").Scan(&end)
				qcancel()
				if err == nil {
					inv.ctr.serverEnd.Store(uint64(end))
				} else {
					_ = conn.Close(context.Background())
					conn = nil
				}
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
