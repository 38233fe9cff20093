package testcontainers

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process started from PATH for one test, on
// its own port, that the test may stop and start again (to simulate a Redis
// outage) or use as an independent node (Redlock).
type RedisServer struct {
	// Addr is the host:port the server listens on; it stays the same across
	// Stop and Start.
	Addr string
	port int
	dir  string
	args []string
	p    *proc
}

// NewRedisServer starts a private redis-server from PATH on a free loopback
// port and stops it at the end of the test. It keeps no data on disk.
// The test fails if redis-server is not on PATH.
func NewRedisServer(t testing.TB) *RedisServer {
	t.Helper()
	s, err := startRedisServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.remove)
	return s
}

func startRedisServer(extra ...string) (*RedisServer, error) {
	return startRedisServerOn(freePort, extra...)
}

// startRedisServerOn starts redis-server on a port from pick. A port that
// was free when picked may be taken before the server binds it, so a
// server that exits before it is ready is tried again on a new port.
func startRedisServerOn(pick func() (int, error), extra ...string) (*RedisServer, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server: %w", errNoBinary)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := pick()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "asidekit-redis-")
		if err != nil {
			return nil, err
		}
		s := &RedisServer{Addr: "127.0.0.1:" + strconv.Itoa(port), port: port, dir: dir, args: extra}
		if lastErr = s.Start(); lastErr == nil {
			return s, nil
		}
		s.remove()
	}
	return nil, lastErr
}

// Start starts the server again after Stop, on the same address. It is a
// no-op while the server runs.
func (s *RedisServer) Start() error {
	if s.p != nil && !s.p.exited() {
		return nil
	}
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--protected-mode", "no", "--loglevel", "warning",
		"--logfile", "redis.log",
	}, s.args...)
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	cmd := exec.Command("redis-server", args...)
	cmd.Dir = s.dir
	p, err := start("redis-server "+s.Addr, cmd, s.dir, syscall.SIGTERM)
	if err != nil {
		return err
	}
	s.p = p
	if err := waitFor(p, func() error { return pingRedis(s.Addr) }); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		return fmt.Errorf("%w; its log: %s", err, bytes.TrimSpace(log))
	}
	return nil
}

// Stop stops the server and removes its files; clients see connection
// errors until Start.
func (s *RedisServer) Stop() {
	if s.p != nil {
		s.p.Stop()
	}
}

// remove stops the server for good and deletes its directory.
func (s *RedisServer) remove() {
	s.Stop()
	_ = os.RemoveAll(s.dir)
}

func pingRedis(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}
