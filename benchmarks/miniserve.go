package benchmarks

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/alicebob/miniredis/v2"
)

// startMiniredis starts an in-process miniredis served on a Unix socket
// and returns the socket's path and a stop function (the server and its
// keys go, the socket's directory is removed). The embedded backend thus
// needs no network, not even loopback: a network namespace has its
// loopback interface down until someone brings it up.
func startMiniredis() (mr *miniredis.Miniredis, path string, stop func(), err error) {
	mr = miniredis.NewMiniRedis()
	c, err := mr.Dial() // starts the server without a listener
	if err != nil {
		return nil, "", nil, fmt.Errorf("benchmarks: start miniredis: %w", err)
	}
	_ = c.Close()
	dir, err := os.MkdirTemp("", "asidebench-redis-")
	if err != nil {
		mr.Close()
		return nil, "", nil, fmt.Errorf("benchmarks: start miniredis: %w", err)
	}
	path = filepath.Join(dir, "redis.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		mr.Close()
		_ = os.RemoveAll(dir)
		return nil, "", nil, fmt.Errorf("benchmarks: start miniredis: %w", err)
	}
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // the listener is closed
			}
			mr.Server().ServeConn(conn)
		}
	}()
	stop = func() {
		_ = ln.Close()
		<-accepting
		mr.Close() // closes every connection served
		_ = os.RemoveAll(dir)
	}
	return mr, path, stop, nil
}
