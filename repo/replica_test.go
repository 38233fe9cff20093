package repo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/plugin/dbresolver"

	"github.com/asidekit/asidekit/internal/sample"
	"github.com/asidekit/asidekit/repo"
	"github.com/asidekit/asidekit/testcontainers"
)

// replicaEnv is a primary with a lagging streaming replica, and a Redis
// namespace: writer writes on the primary; reader is another process's
// repository (its own Cache) whose reads dbresolver sends to the replica.
type replicaEnv struct {
	sr     *testcontainers.StreamingReplica
	writer *repo.Repository[sample.User, int64]
	reader *repo.Repository[sample.User, int64]
}

func newReplicaEnv(t *testing.T, delay time.Duration) *replicaEnv {
	t.Helper()
	return newReplicaEnvWith(t, delay, true)
}

// newReplicaEnvWith is newReplicaEnv; without resolver the reader has
// the replica as Options.ReadDB instead of dbresolver.
func newReplicaEnvWith(t *testing.T, delay time.Duration, resolver bool) *replicaEnv {
	t.Helper()
	sr := testcontainers.NewStreamingReplica(t, delay)
	if err := sample.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	return newReplicaEnvOn(t, sr, resolver)
}

// newReplicaEnvOn is a replicaEnv on sr (migrated) with a Redis namespace
// of its own.
func newReplicaEnvOn(t *testing.T, sr *testcontainers.StreamingReplica, resolver bool) *replicaEnv {
	t.Helper()
	return newReplicaEnvRedis(t, sr, resolver, testcontainers.Redis(t))
}

// newReplicaEnvRedis is newReplicaEnvOn on the Redis namespace rn
// (standalone or Cluster).
func newReplicaEnvRedis(t *testing.T, sr *testcontainers.StreamingReplica, resolver bool, rn *testcontainers.RedisNamespace) *replicaEnv {
	t.Helper()
	w := newEnvOn(t, sr.Primary.DB, rn.Client, rn.Namespace)
	routed, err := gorm.Open(postgres.Open(sr.Primary.DSN), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := routed.DB(); err == nil {
			_ = s.Close()
		}
	})
	var o repo.Options
	if resolver {
		if err := routed.Use(dbresolver.Register(dbresolver.Config{Replicas: []gorm.Dialector{postgres.Open(sr.ReplicaDSN)}})); err != nil {
			t.Fatal(err)
		}
	} else {
		o.ReadDB = sr.Replica
	}
	r := newEnvOn(t, routed, rn.Client, rn.Namespace)
	return &replicaEnv{sr: sr, writer: w.users(t, repo.Options{}), reader: r.users(t, o)}
}

// A write through repo, then at once a read on another process whose
// reads go to a replica 300 ms behind: the read may not load the old row
// from the replica and cache it, so that once the lag has passed the
// reader still serves the new row.
func TestReplica_readAfterWriteNotStale(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := newReplicaEnv(t, 300*time.Millisecond)
	u := sample.User{ID: 1, Email: "ada@example.com", Name: "Ada"}
	if err := e.writer.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if err := e.sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	u.Name = "Bea"
	if err := e.writer.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reader.Get(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := e.sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := e.reader.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Bea" {
		t.Fatalf("after the replica caught up the reader serves %q, want Bea (an old row from the replica was cached); %+v", got.Name, e.reader.ReadStats())
	}
}

// With the replica's replay paused, a write then a read on the other
// process: the load goes to the primary (counted as redirected for lag)
// and the reader serves the new row, before and after the replay resumes;
// with the check switched off the old row is loaded from the replica and
// still served after it caught up. Through Options.ReadDB and through
// dbresolver.
func TestReplica_pausedReplay(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sr := testcontainers.NewStreamingReplica(t, 0)
	if err := sample.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	id := int64(0)
	for _, resolver := range []bool{false, true} {
		for _, rule := range []bool{true, false} {
			id++
			name := map[bool]string{false: "ReadDB", true: "dbresolver"}[resolver] + map[bool]string{true: "/rule", false: "/noRule"}[rule]
			t.Run(name, func(t *testing.T) {
				e := newReplicaEnvOn(t, sr, resolver)
				if !rule {
					repo.IgnoreReplicaLSN(e.reader)
				}
				got := pausedRead(ctx, t, e, id)
				switch {
				case rule && got != "Bea":
					t.Fatalf("reader serves %q after the replica caught up, want Bea; %+v", got, e.reader.ReadStats())
				case !rule && got != "Ada":
					t.Fatalf("check off: reader serves %q, want the stale Ada (else this test shows nothing)", got)
				}
				if s := e.reader.ReadStats(); rule && (s.RedirectedLag == 0 || s.ReplicaLoads == 0) {
					t.Fatalf("stats %+v: want a redirected load and a replica load", s)
				}
			})
		}
	}
}

// TestReplica_pausedReplay on a Redis Cluster: the versions that carry
// the writes' positions live on the cluster's masters; with the check the
// reader serves the new row, without it the stale one.
func TestReplica_pausedReplay_cluster(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sr := testcontainers.NewStreamingReplica(t, 0)
	if err := sample.Migrate(sr.Primary.DB); err != nil {
		t.Fatal(err)
	}
	for i, rule := range []bool{true, false} {
		t.Run(map[bool]string{true: "rule", false: "noRule"}[rule], func(t *testing.T) {
			e := newReplicaEnvRedis(t, sr, true, testcontainers.RedisCluster(t))
			if !rule {
				repo.IgnoreReplicaLSN(e.reader)
			}
			got := pausedRead(ctx, t, e, int64(i+1))
			switch {
			case rule && got != "Bea":
				t.Fatalf("reader serves %q after the replica caught up, want Bea; %+v", got, e.reader.ReadStats())
			case !rule && got != "Ada":
				t.Fatalf("check off: reader serves %q, want the stale Ada (else this test shows nothing)", got)
			}
			if s := e.reader.ReadStats(); rule && (s.RedirectedLag == 0 || s.ReplicaLoads == 0) {
				t.Fatalf("stats %+v: want a redirected load and a replica load", s)
			}
		})
	}
}

// pausedRead creates row id (Ada), lets the reader cache it from the
// replica, pauses the replay, renames it Bea through the writer, reads it
// on the reader, resumes the replay and returns what the reader then
// serves.
func pausedRead(ctx context.Context, t *testing.T, e *replicaEnv, id int64) string {
	t.Helper()
	// A read before the row exists starts its version (a write leaves an
	// id without one without one: its next miss would load from the
	// primary), in which the writes then record their positions.
	if _, err := e.reader.Get(ctx, id); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("read before the row exists: %v", err)
	}
	u := sample.User{ID: id, Email: fmt.Sprintf("u%d@example.com", id), Name: "Ada"}
	if err := e.writer.Create(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if err := e.sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := e.reader.Get(ctx, id); err != nil || got.Name != "Ada" {
		t.Fatalf("first read: %+v, %v", got, err)
	}
	if err := e.sr.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.sr.ResumeReplay(context.WithoutCancel(ctx)) }()
	u.Name = "Bea"
	if err := e.writer.Update(ctx, &u); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reader.Get(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := e.sr.ResumeReplay(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := e.reader.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return got.Name
}

// A replica that is stopped, or promoted, serves no load: the reader's
// loads go to the primary, without an error, and see every write.
func TestReplica_downOrPromoted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, promote := range []bool{false, true} {
		t.Run(map[bool]string{false: "down", true: "promoted"}[promote], func(t *testing.T) {
			e := newReplicaEnvWith(t, 0, promote) // dbresolver for the promoted one, ReadDB for the stopped one
			u := sample.User{ID: 1, Email: "ada@example.com", Name: "Ada"}
			if err := e.writer.Create(ctx, &u); err != nil {
				t.Fatal(err)
			}
			if promote {
				if err := e.sr.Promote(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				e.sr.StopReplica()
			}
			for i, name := range []string{"Bea", "Cy"} {
				u.Name = name
				if err := e.writer.Update(ctx, &u); err != nil {
					t.Fatal(err)
				}
				got, err := e.reader.Get(ctx, 1)
				if err != nil || got.Name != name {
					t.Fatalf("read %d: %+v, %v; want %s", i, got, err, name)
				}
			}
			s := e.reader.ReadStats()
			if s.PrimaryLoads < 2 || s.RedirectedUnavailable+s.RedirectedLag+s.ReplicaErrors == 0 {
				t.Fatalf("stats %+v: want the loads on the primary, counted as redirected", s)
			}
		})
	}
}

// Read-your-writes across processes: a transaction that writes rows with
// plain GORM (no invalidation carries their position) hands back its
// position (TrackWrites); another process's read carrying it (ReadAfter)
// loads from the primary while the replica has not replayed it, and finds
// the row; the same read without it loads from the replica and does not.
func TestReplica_readAfterToken(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := newReplicaEnv(t, 0)
	// Rows 7 and 8 read (a miss starts their versions), then written and
	// deleted through repo: their versions record a position (an id whose
	// version records none, or that has none, loads from the primary),
	// which the replica replays.
	for _, id := range []int64{7, 8} {
		if _, err := e.reader.Get(ctx, id); !errors.Is(err, repo.ErrNotFound) {
			t.Fatalf("read before the row exists: %v", err)
		}
		u := sample.User{ID: id, Email: fmt.Sprintf("old%d@example.com", id), Name: "Old"}
		if err := e.writer.Create(ctx, &u); err != nil {
			t.Fatal(err)
		}
		if err := e.writer.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.sr.WaitReplayed(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.sr.PauseReplay(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.sr.ResumeReplay(context.WithoutCancel(ctx)) }()
	wctx, tok := repo.TrackWrites(ctx)
	err := repo.Transaction(wctx, e.sr.Primary.DB, func(tx *repo.Tx) error {
		return tx.DB().Create([]sample.User{{ID: 7, Email: "g@example.com", Name: "Gil"}, {ID: 8, Email: "h@example.com", Name: "Hal"}}).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if tok.LSN() == 0 {
		t.Fatal("the write handed back no position")
	}
	if _, err := e.reader.Get(ctx, 8); !errors.Is(err, repo.ErrNotFound) {
		t.Fatalf("read without the token: %v; want the replica's ErrNotFound (else this test shows nothing)", err)
	}
	got, err := e.reader.Get(repo.ReadAfter(ctx, tok.LSN()), 7)
	if err != nil || got.Name != "Gil" {
		t.Fatalf("read with the token: %+v, %v; want Gil", got, err)
	}
}
