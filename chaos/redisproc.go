package chaos

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"time"
)

// redisServer is a private redis-server started from PATH on a free
// loopback port, with no persistence, that a run may kill and restart
// empty on the same port.
type redisServer struct {
	Addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedis(ctx context.Context) (*redisServer, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("chaos: redis-server is not on PATH: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	dir, err := os.MkdirTemp("", "asidechaos-redis-")
	if err != nil {
		return nil, err
	}
	s := &redisServer{Addr: addr, dir: dir}
	if err := s.start(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

func (s *redisServer) start(ctx context.Context) error {
	_, port, _ := net.SplitHostPort(s.Addr)
	s.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--logfile", "")
	s.cmd.Stdout, s.cmd.Stderr = nil, nil
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pong(s.Addr) {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("chaos: redis-server on %s exited at start", s.Addr)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: redis-server on %s does not answer", s.Addr)
		}
	}
}

// pong reports whether the server at addr answers PING. It speaks RESP
// itself: a go-redis client would log every refused dial while the server
// starts.
func pong(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := io.ReadFull(c, buf)
	return string(buf[:n]) == "+PONG\r\n"
}

// kill stops the server at once (SIGKILL): everything it held is lost.
func (s *redisServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// restart starts it again, empty, on the same address; it is a no-op
// while the server runs.
func (s *redisServer) restart(ctx context.Context) error {
	select {
	case <-s.done:
		return s.start(ctx)
	default:
		return nil
	}
}

func (s *redisServer) close() {
	s.kill()
	_ = os.RemoveAll(s.dir)
}
