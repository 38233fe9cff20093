package cdc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/asidekit/asidekit/repo/cdc"
	"github.com/asidekit/asidekit/testcontainers"
)

// A transaction of many batches shows its progress before its commit is
// applied: Stats.PendingDone of Stats.Pending changes are in the cache,
// Applied is still before the commit, and nothing is counted in Changes;
// once it is applied, both are 0 and every row reads fresh.
func TestInvalidator_largeTransactionProgress(t *testing.T) {
	t.Parallel()
	rn := testcontainers.Redis(t)
	client := rn.NewClient(t)
	hold := &holdSecondBatch{paused: make(chan struct{}), release: make(chan struct{})}
	client.AddHook(hold)
	t.Cleanup(hold.free)
	e := newEnv(t, client, rn.Namespace)
	ctx := context.Background()
	const rows = 200
	e.exec(t, `INSERT INTO users (id, email, name, created_at, updated_at)
		SELECT i, 'u' || i || '@example.com', 'old', now(), now() FROM generate_series(1, ?::bigint) i`, rows)
	inv := e.invalidator(t, cdc.Options{BatchSize: 16})
	run(t, inv)
	e.sync(t, inv)
	for id := int64(1); id <= rows; id++ {
		e.name(t, id)
	}
	before := inv.Stats()
	hold.inv.Store(inv)

	e.exec(t, "UPDATE users SET name = 'new'")
	end := e.currentLSN(t)
	applied := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, patience)
		defer cancel()
		applied <- inv.Wait(ctx, end)
	}()
	select {
	case <-hold.paused: // a batch is done, the next one is held
	case err := <-applied:
		t.Fatalf("the transaction was applied (Wait: %v) with no batch of it reported done before: %+v", err, inv.Stats())
	}
	s := inv.Stats()
	if s.PendingDone == 0 || s.PendingDone >= s.Pending || s.Pending > rows {
		t.Errorf("mid-transaction: Pending %d, PendingDone %d; want 0 < done < pending <= %d", s.Pending, s.PendingDone, rows)
	}
	if s.Applied >= end || s.Changes != before.Changes || s.Transactions != before.Transactions {
		t.Errorf("mid-transaction: Applied %s (commit ends at %s), Changes %d → %d, Transactions %d → %d: counted before it is applied",
			s.Applied, end, before.Changes, s.Changes, before.Transactions, s.Transactions)
	}
	hold.free()
	if err := <-applied; err != nil {
		t.Fatal(err)
	}
	if s := inv.Stats(); s.Pending != 0 || s.PendingDone != 0 || s.Changes < before.Changes+rows {
		t.Errorf("applied: Pending %d, PendingDone %d, Changes %d → %d; want 0, 0 and %d more", s.Pending, s.PendingDone, before.Changes, s.Changes, rows)
	}
	for id := int64(1); id <= rows; id++ {
		if got := e.name(t, id); got != "new" {
			t.Fatalf("id %d: name = %q after Wait, want new", id, got)
		}
	}
}

// holdSecondBatch holds the first pipeline sent once inv reports a batch
// done (Stats.PendingDone), until free.
type holdSecondBatch struct {
	inv             atomic.Pointer[cdc.Invalidator]
	once, freeOnce  sync.Once
	paused, release chan struct{}
}

func (h *holdSecondBatch) free() { h.freeOnce.Do(func() { close(h.release) }) }

func (h *holdSecondBatch) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *holdSecondBatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *holdSecondBatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if inv := h.inv.Load(); inv != nil && inv.Stats().PendingDone > 0 {
			h.once.Do(func() {
				close(h.paused)
				<-h.release
			})
		}
		return next(ctx, cmds)
	}
}
