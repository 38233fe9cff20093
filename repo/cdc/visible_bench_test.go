package cdc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// BenchmarkApply_afterVisible measures how soon a transaction whose
// COMMIT was decoded before it became visible is applied once it is: the
// case of every write on a server with a synchronous standby, and of a
// committing backend that waits for a core. One iteration holds an
// UPDATE's commit for hold (a synchronous standby that never answers),
// cancels the backend's wait for it, which makes the commit visible and
// returns the COMMIT, and reports the time from the COMMIT returning to
// the Invalidator having applied it (ms-after-commit, the write's
// staleness) and the snapshot queries the wait took (snapshots/op).
//
//	go test -run '^$' -bench Apply_afterVisible -benchtime 20x ./repo/cdc/
func BenchmarkApply_afterVisible(b *testing.B) {
	pg := testcontainers.PrivateLogicalPostgres(b, "synchronous_standby_names=ghost", "synchronous_commit=local")
	for _, hold := range []time.Duration{20 * time.Millisecond, 200 * time.Millisecond} {
		b.Run(fmt.Sprint("hold=", hold), func(b *testing.B) {
			rn := testcontainers.Redis(b)
			benchAfterVisible(b, newEnvOn(b, pg, rn.Client, rn.Namespace), hold)
		})
	}
}

func benchAfterVisible(b *testing.B, e *env, hold time.Duration) {
	ctx := context.Background()
	e.exec(b, "DELETE FROM users")
	e.exec(b, "INSERT INTO users (id, email, name, created_at, updated_at) VALUES (1, 'ada@example.com', 'Ada', now(), now())")
	inv := e.invalidator(b, cdc.Options{})
	waiting := make(chan struct{}, 1)
	var invisible atomic.Int64 // snapshots that showed the commit invisible
	cdc.OnInvisible(inv, func() {
		invisible.Add(1)
		select {
		case waiting <- struct{}{}:
		default:
		}
	})
	run(b, inv)
	e.sync(b, inv)
	writer, pid := backend(b, e)
	var after time.Duration
	b.ResetTimer()
	for i := range b.N {
		select {
		case <-waiting: // sent by the previous iteration's later snapshots
		default:
		}
		applied := inv.Stats().Transactions
		committed := make(chan error, 1)
		go func() {
			_, err := writer.Exec(ctx, fmt.Sprintf(`BEGIN; SET LOCAL synchronous_commit = on;
				UPDATE users SET name = 'n%d' WHERE id = 1; COMMIT`, i))
			committed <- err
		}()
		select {
		case <-waiting:
		case <-time.After(patience):
			b.Fatal("the Invalidator never waited for the commit to become visible")
		}
		time.Sleep(hold) // the standby's lag
		e.exec(b, "SELECT pg_cancel_backend(?)", pid)
		<-committed // the cancelled wait for the standby ends in a warning
		start := time.Now()
		for inv.Stats().Transactions == applied {
			if time.Since(start) > patience {
				b.Fatal("the Invalidator never applied the transaction")
			}
			time.Sleep(20 * time.Microsecond)
		}
		after += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(after.Microseconds())/1000/float64(b.N), "ms-after-commit")
	// Each wait ends with the snapshot that shows the commit visible.
	b.ReportMetric(float64(invisible.Load()+int64(b.N))/float64(b.N), "snapshots/op")
}
