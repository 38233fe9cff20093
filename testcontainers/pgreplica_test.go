package testcontainers

import (
	"context"
	"testing"
	"time"
)

// The replica serves the primary's database; with replay paused it keeps
// the old row, after resuming it has the new one, promoted it leaves
// recovery, stopped it refuses connections.
func TestStreamingReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sr := NewStreamingReplica(t, 0)
	p := sr.Primary.DB
	if err := p.Exec("CREATE TABLE kv (k int PRIMARY KEY, v text); INSERT INTO kv VALUES (1, 'old')").Error; err != nil {
		t.Fatal(err)
	}
	if err := sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	value := func() string {
		t.Helper()
		var v string
		if err := sr.Replica.WithContext(ctx).Raw("SELECT v FROM kv WHERE k = 1").Scan(&v).Error; err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := value(); got != "old" {
		t.Fatalf("replica has %q, want old", got)
	}
	if err := sr.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	// Paused means paused once pg_get_wal_replay_pause_state says so.
	if err := sr.waitReplica(ctx, "SELECT pg_get_wal_replay_pause_state() = 'paused'"); err != nil {
		t.Fatal(err)
	}
	if err := p.Exec("UPDATE kv SET v = 'new' WHERE k = 1").Error; err != nil {
		t.Fatal(err)
	}
	if got := value(); got != "old" {
		t.Fatalf("paused replica has %q, want old", got)
	}
	if err := sr.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if got := value(); got != "new" {
		t.Fatalf("resumed replica has %q, want new", got)
	}
	if err := sr.SetApplyDelay(ctx, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := sr.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	var rec bool
	if err := sr.Replica.WithContext(ctx).Raw("SELECT pg_is_in_recovery()").Scan(&rec).Error; err != nil || rec {
		t.Fatalf("promoted replica in recovery = %v, %v", rec, err)
	}
	sr.StopReplica()
	if err := sr.Replica.WithContext(ctx).Exec("SELECT 1").Error; err == nil {
		t.Fatal("stopped replica answered")
	}
}
