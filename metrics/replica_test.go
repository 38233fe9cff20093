package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asidekit/asidekit/cacheaside"
	model "github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/metrics"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

var _ metrics.ReadStatser = (*repo.Repository[model.User, int64])(nil)

type fixedReadStats repo.ReadStats

func (f fixedReadStats) ReadStats() repo.ReadStats { return repo.ReadStats(f) }

func TestReadCollector_matchesStats(t *testing.T) {
	s := repo.ReadStats{ReplicaLoads: 9, PrimaryLoads: 5, RedirectedLag: 3, RedirectedUnavailable: 2, ReplicaErrors: 1, LagBytes: 4096,
		RedirectedUnknown: 7, WritePositionErrors: 6, LoadPositions: 8}
	reg := registry(t, metrics.NewReadCollector("users", fixedReadStats(s)))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"asidekit_reads_loads_total", []string{"target", "replica"}, 9},
		{"asidekit_reads_loads_total", []string{"target", "primary"}, 5},
		{"asidekit_reads_redirects_total", []string{"reason", "lag"}, 3},
		{"asidekit_reads_redirects_total", []string{"reason", "unavailable"}, 2},
		{"asidekit_reads_redirects_total", []string{"reason", "unknown"}, 7},
		{"asidekit_reads_replica_errors_total", nil, 1},
		{"asidekit_reads_write_position_errors_total", nil, 6},
		{"asidekit_reads_load_positions_total", nil, 8},
	} {
		if got := gather(t, reg, c.name, append([]string{"repository", "users"}, c.labels...)...).value; got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if got := gather(t, reg, "asidekit_reads_lag_bytes", "repository", "users").value; got != 4096 {
		t.Errorf("asidekit_reads_lag_bytes = %v, want 4096", got)
	}
}

func TestReadCollector_nilSource(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a nil source")
		}
	}()
	metrics.NewReadCollector("users", nil)
}

// On a real primary and replica: a miss loaded from the replica counts
// as a replica load; with the replay paused, a miss after a write goes to
// the primary and counts as a redirect for lag.
func TestReadCollector_realReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sr := testcontainers.NewStreamingReplica(t, 0)
	if err := model.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	rn := testcontainers.Redis(t)
	cache, err := cacheaside.New(rn.Client, &cacheaside.Options{Namespace: rn.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cache.Close() })
	users, err := repo.New[model.User, int64](sr.Primary.DB, cache, &repo.Options{ReadDB: sr.Replica})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, metrics.NewReadCollector("users", users))
	// A read before the row exists starts its version on the primary (an
	// id without a version records no write: one primary load), in which
	// the Create then records its position.
	if _, err := users.Get(ctx, 1); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("read before the row exists: %v", err)
	}
	u := model.User{ID: 1, Email: "ada@example.com", Name: "Ada"}
	if err := users.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if err := sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := users.Get(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if got := gather(t, reg, "asidekit_reads_loads_total", "target", "replica").value; got != 1 {
		t.Fatalf("replica loads = %v after one miss on a caught-up replica, want 1", got)
	}
	if err := sr.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sr.ResumeReplay(context.WithoutCancel(ctx)) }()
	u.Name = "Bea"
	if err := users.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if got, err := users.Get(ctx, 1); err != nil || got.Name != "Bea" {
		t.Fatalf("read after the write: %+v, %v", got, err)
	}
	if got := gather(t, reg, "asidekit_reads_redirects_total", "reason", "lag").value; got != 1 {
		t.Errorf("redirects for lag = %v, want 1", got)
	}
	if got := gather(t, reg, "asidekit_reads_loads_total", "target", "primary").value; got != 2 {
		t.Errorf("primary loads = %v, want 2 (the first read's and the redirected one)", got)
	}
	if got := gather(t, reg, "asidekit_reads_lag_bytes", "repository", "users").value; got <= 0 {
		t.Errorf("lag_bytes = %v after a redirect for lag, want > 0", got)
	}
}
