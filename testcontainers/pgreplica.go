package testcontainers

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// StreamingReplica is a PostgreSQL primary with one streaming (physical)
// replica, both started from the initdb, pg_basebackup and postgres
// binaries on PATH on free loopback ports for one test (never the
// environment's server or Docker: its tests pause, stop and promote the
// replica). Both stop at the end of the test.
type StreamingReplica struct {
	// Primary is a fresh database on the primary.
	Primary *PostgresDB
	// Replica is a GORM handle on the same database on the replica,
	// closed at cleanup.
	Replica *gorm.DB
	// ReplicaDSN connects to the database on the replica.
	ReplicaDSN string

	primary, replica *binServer
	primaryAdmin     string
	replicaAdmin     string
	closers          []func() // run by Close, last first
}

// primaryArgs are the primary's settings: synchronous commits (with
// synchronous_commit=off a commit would reach the WAL sender up to three
// wal_writer_delay later) and room for the replica's sender.
var primaryArgs = []string{
	"-c", "wal_level=replica",
	"-c", "max_wal_senders=8",
	"-c", "synchronous_commit=on",
}

// NewStreamingReplica starts a primary and a replica made from it with
// pg_basebackup -R, replaying with recovery_min_apply_delay applyDelay (0:
// none; SetApplyDelay changes it), creates a fresh database on the primary
// and waits until the replica has replayed it. The test fails when a
// binary is missing or a server does not start.
func NewStreamingReplica(t testing.TB, applyDelay time.Duration) *StreamingReplica {
	t.Helper()
	sr, err := StartStreamingReplica(applyDelay)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sr.Close)
	return sr
}

// StartStreamingReplica is NewStreamingReplica outside a test (asidebench
// uses it): the caller stops both servers with Close.
func StartStreamingReplica(applyDelay time.Duration) (*StreamingReplica, error) {
	sr, err := startStreamingReplica(applyDelay)
	if err != nil {
		return nil, err
	}
	sr.closers = append(sr.closers, sr.stop)
	db, drop, err := createDatabase(sr.primaryAdmin, "ak_test_")
	if err != nil {
		sr.Close()
		return nil, err
	}
	sr.closers = append(sr.closers, func() { _ = drop() })
	db.Source = SourceBinary
	sr.Primary = db
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second+applyDelay)
	defer cancel()
	if err := sr.WaitReplayed(ctx); err != nil {
		sr.Close()
		return nil, err
	}
	if sr.ReplicaDSN, err = withDatabase(sr.replicaAdmin, db.Name); err != nil {
		sr.Close()
		return nil, err
	}
	if sr.Replica, err = gorm.Open(postgres.Open(sr.ReplicaDSN), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)}); err != nil {
		sr.Close()
		return nil, err
	}
	sr.closers = append(sr.closers, func() {
		if sqlDB, err := sr.Replica.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return sr, nil
}

// Close closes the handles, drops the database and stops both servers
// (NewStreamingReplica's cleanup). It may be called more than once.
func (sr *StreamingReplica) Close() {
	for i := len(sr.closers) - 1; i >= 0; i-- {
		sr.closers[i]()
	}
	sr.closers = nil
}

func startStreamingReplica(applyDelay time.Duration) (*StreamingReplica, error) {
	basebackup, err := findPGBinary("pg_basebackup")
	if err != nil {
		return nil, err
	}
	primary, err := startPGServer(primaryArgs...)
	if err != nil {
		return nil, err
	}
	sr := &StreamingReplica{primary: primary, primaryAdmin: primary.dsn}
	dir, err := os.MkdirTemp("", "asidekit-pg-replica-")
	if err != nil {
		sr.stop()
		return nil, err
	}
	cred, err := pgCred(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		sr.stop()
		return nil, err
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(basebackup, "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres",
		"-D", data, "-R", "-X", "stream", "--no-sync", "-c", "fast")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		sr.stop()
		return nil, fmt.Errorf("pg_basebackup: %w: %s", err, out)
	}
	// In postgresql.auto.conf, not on the command line, so that ALTER
	// SYSTEM (SetApplyDelay) can change it.
	if err := appendConf(data, fmt.Sprintf("recovery_min_apply_delay = '%dms'\n", applyDelay.Milliseconds())); err != nil {
		_ = os.RemoveAll(dir)
		sr.stop()
		return nil, err
	}
	replica, err := runPGServer(dir, cred, "-c", "hot_standby=on", "-c", "hot_standby_feedback=on")
	if err != nil {
		_ = os.RemoveAll(dir)
		sr.stop()
		return nil, fmt.Errorf("replica: %w", err)
	}
	sr.replica, sr.replicaAdmin = replica, replica.dsn
	return sr, nil
}

func appendConf(data, line string) error {
	f, err := os.OpenFile(filepath.Join(data, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (sr *StreamingReplica) stop() {
	if sr.replica != nil {
		sr.replica.p.Stop()
	}
	if sr.primary != nil {
		sr.primary.p.Stop()
	}
}

// replicaExec runs stmt on the replica's admin database.
func (sr *StreamingReplica) replicaExec(ctx context.Context, stmt string) error {
	return adminExec(ctx, sr.replicaAdmin, stmt)
}

// SetApplyDelay sets the replica's recovery_min_apply_delay (ALTER SYSTEM
// and a reload); it applies to the transactions it replays from then on.
func (sr *StreamingReplica) SetApplyDelay(ctx context.Context, d time.Duration) error {
	if err := sr.replicaExec(ctx, fmt.Sprintf("ALTER SYSTEM SET recovery_min_apply_delay = '%dms'", d.Milliseconds())); err != nil {
		return err
	}
	return sr.replicaExec(ctx, "SELECT pg_reload_conf()")
}

// PauseReplay stops the replica's replay (pg_wal_replay_pause): it keeps
// receiving WAL and answering queries from the last replayed state.
func (sr *StreamingReplica) PauseReplay(ctx context.Context) error {
	return sr.replicaExec(ctx, "SELECT pg_wal_replay_pause()")
}

// ResumeReplay resumes a paused replay (pg_wal_replay_resume).
func (sr *StreamingReplica) ResumeReplay(ctx context.Context) error {
	return sr.replicaExec(ctx, "SELECT pg_wal_replay_resume()")
}

// StopReplica shuts the replica down (fast shutdown): connections to it
// are refused from then on.
func (sr *StreamingReplica) StopReplica() { sr.replica.p.Stop() }

// Promote promotes the replica to a primary of its own (pg_promote) and
// waits until it has left recovery. The old primary keeps running; writes
// to either no longer reach the other.
func (sr *StreamingReplica) Promote(ctx context.Context) error {
	return sr.replicaExec(ctx, "SELECT pg_promote(true, 60)")
}

// PrimaryLSN returns the primary's current WAL insert position.
func (sr *StreamingReplica) PrimaryLSN(ctx context.Context) (string, error) {
	return queryString(ctx, sr.primaryAdmin, "SELECT pg_current_wal_insert_lsn()::text")
}

// WaitReplayed waits until the replica has replayed everything the primary
// had written when it was called, or ctx ends.
func (sr *StreamingReplica) WaitReplayed(ctx context.Context) error {
	lsn, err := sr.PrimaryLSN(ctx)
	if err != nil {
		return err
	}
	return sr.waitReplica(ctx, "SELECT pg_last_wal_replay_lsn() >= '"+lsn+"'::pg_lsn")
}

func (sr *StreamingReplica) waitReplica(ctx context.Context, cond string) error {
	db, err := sql.Open("pgx", sr.replicaAdmin)
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		var ok sql.NullBool
		err := db.QueryRowContext(ctx, cond).Scan(&ok)
		if err == nil && ok.Valid && ok.Bool {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replica: %s: %w (last error %v)", cond, ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func queryString(ctx context.Context, dsn, q string) (string, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var s string
	err = db.QueryRowContext(ctx, q).Scan(&s)
	return s, err
}
