package testcontainers

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// Environment variables read in step (1) of the resolution order.
const (
	EnvPostgresDSN       = "ASIDEKIT_POSTGRES_DSN"
	EnvRedisAddr         = "ASIDEKIT_REDIS_ADDR"
	EnvRedisClusterAddrs = "ASIDEKIT_REDIS_CLUSTER_ADDRS"
)

// Source says how a backend was found.
type Source string

// The ways a backend can be provided, in resolution order.
const (
	SourceEnv    Source = "env"
	SourceDocker Source = "docker"
	SourceBinary Source = "binary"
)

// resolved caches one backend per test binary.
type resolved[T any] struct {
	once sync.Once
	val  T
	src  Source
	err  error
}

func (r *resolved[T]) get(find func() (T, Source, error)) (T, Source, error) {
	r.once.Do(func() { r.val, r.src, r.err = find() })
	return r.val, r.src, r.err
}

// noBackend is the one failure message of step (4).
func noBackend(what, env, binary string, reasons []string) error {
	return fmt.Errorf("testcontainers: no %s backend: set %s, or start a Docker engine, "+
		"or put %s on PATH (%s)", what, env, binary, strings.Join(reasons, "; "))
}

// uniqueName returns prefix followed by 12 random hex digits.
func uniqueName(prefix string) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}

func envList(name string) []string {
	var out []string
	for _, s := range strings.Split(os.Getenv(name), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func fatal(t testing.TB, err error) {
	t.Helper()
	t.Fatal(err)
}
