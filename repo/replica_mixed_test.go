package repo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// A fleet where only some processes read from replicas: the writer's
// process has none (no ReadDB), the reader's has one whose replay is
// paused. A write that returned nil records an unknown position (its
// process read none), so the reader's miss loads from the primary: the
// new row, at once and from the cache afterwards. With the rule off (the
// write records no position) the reader trusts the paused replica and
// reads, and caches, the old row. Not parallel: the writer's "process
// without replicas" is process-wide state.
func TestReplica_mixedFleet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sr := testcontainers.NewStreamingReplica(t, 0)
	if err := sample.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	for i, rule := range []bool{true, false} {
		id := int64(i + 1)
		t.Run(map[bool]string{true: "rule", false: "noRule"}[rule], func(t *testing.T) {
			rn := testcontainers.Redis(t)
			writer := newEnvOn(t, openDB(t, sr.Primary.DSN), rn.Client, rn.Namespace).users(t, repo.Options{})
			reader := newEnvOn(t, openDB(t, sr.Primary.DSN), rn.NewClient(t), rn.Namespace).users(t, repo.Options{ReadDB: openDB(t, sr.ReplicaDSN)})
			write := func(f func() error) {
				t.Helper()
				var err error
				repo.AsProcessWithoutReplicas(rule, func() { err = f() })
				if err != nil {
					t.Fatal(err)
				}
			}
			u := sample.User{ID: id, Email: fmt.Sprintf("m%d@example.com", id), Name: "Ada"}
			write(func() error { return writer.Create(ctx, &u) })
			if err := sr.WaitReplayed(ctx); err != nil {
				t.Fatal(err)
			}
			if got, err := reader.Get(ctx, id); err != nil || got.Name != "Ada" {
				t.Fatalf("first read: %+v, %v", got, err)
			}
			if err := sr.PauseReplay(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = sr.ResumeReplay(context.WithoutCancel(ctx)) }()
			u.Name = "Bea"
			write(func() error { return writer.Update(ctx, &u) })
			before := reader.ReadStats()
			for n := range 2 { // the miss, then the entry it stored
				got, err := reader.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if !rule {
					if got.Name != "Ada" {
						t.Fatalf("rule off: read %q, want the replica's old Ada (else this test shows nothing)", got.Name)
					}
					return
				}
				if got.Name != "Bea" {
					t.Fatalf("read %d after the write: %q, want Bea; stats %+v", n, got.Name, reader.ReadStats())
				}
			}
			if s := reader.ReadStats(); s.RedirectedUnknown == before.RedirectedUnknown || s.ReplicaLoads != before.ReplicaLoads {
				t.Fatalf("stats %+v, before %+v: want the miss redirected to the primary for an unknown position", s, before)
			}
		})
	}
}
