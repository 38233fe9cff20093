package testcontainers

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Images used on the Docker path.
const (
	postgresImage = "postgres:16-alpine"
	redisImage    = "redis:7-alpine"
)

// containerLabel marks every container this package starts, so that ones
// left behind by a killed test binary can be found and removed:
//
//	docker rm -f $(docker ps -aq --filter label=asidekit.testcontainers)
const containerLabel = "asidekit.testcontainers"

// dockerCLI drives a Docker engine through the docker command-line client,
// which keeps the engine's client libraries out of the module graph.
type dockerCLI struct {
	bin string // the docker executable: a name looked up on PATH, or a path
}

// docker is the client of the Docker path.
var docker = dockerCLI{bin: "docker"}

var (
	dockerOnce sync.Once
	dockerErr  error

	containersMu sync.Mutex
	containers   []string // ids started here, removed by Main
)

// dockerAvailable reports whether a Docker engine answers, asking once.
func dockerAvailable() error {
	dockerOnce.Do(func() { dockerErr = docker.available() })
	return dockerErr
}

func (d dockerCLI) available() error {
	if _, err := exec.LookPath(d.bin); err != nil {
		return fmt.Errorf("no Docker engine answers: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.run(ctx, "version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("no Docker engine answers: %w", err)
	}
	return nil
}

// run runs the docker client with args and returns its trimmed output.
func (d dockerCLI) run(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// start runs a detached, labelled container that removes itself when it
// stops, and registers it for stopContainers.
func (d dockerCLI) start(ctx context.Context, args ...string) (string, error) {
	args = append([]string{"run", "--detach", "--rm", "--label", containerLabel}, args...)
	id, err := d.run(ctx, args...)
	if err != nil {
		return "", err
	}
	containersMu.Lock()
	containers = append(containers, id)
	containersMu.Unlock()
	return id, nil
}

// hostAddr returns the loopback address published for the container's port.
func (d dockerCLI) hostAddr(ctx context.Context, id, port string) (string, error) {
	out, err := d.run(ctx, "port", id, port+"/tcp")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") { // "127.0.0.1:49153", one per binding
		if _, p, err := net.SplitHostPort(strings.TrimSpace(line)); err == nil {
			return net.JoinHostPort("127.0.0.1", p), nil
		}
	}
	return "", fmt.Errorf("docker port %s %s: no address in %q", id, port, out)
}

func stopContainers() {
	containersMu.Lock()
	ids := containers
	containers = nil
	containersMu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = docker.run(ctx, append([]string{"rm", "--force"}, ids...)...)
}

// startPostgres runs PostgreSQL in a container and returns an admin DSN
// once the server accepts connections over TCP (the image's initialisation
// server listens on a Unix socket only, so the first TCP answer is the
// real server's). extra are more server arguments ("-c", "name=value").
func (d dockerCLI) startPostgres(extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"--publish", "127.0.0.1::5432",
		"--env", "POSTGRES_PASSWORD=postgres", postgresImage}, extra...)
	id, err := d.start(ctx, args...)
	if err != nil {
		return "", fmt.Errorf("postgres container: %w", err)
	}
	addr, err := d.hostAddr(ctx, id, "5432")
	if err != nil {
		return "", fmt.Errorf("postgres container: %w", err)
	}
	dsn := "postgres://postgres:postgres@" + addr + "/postgres?sslmode=disable"
	err = waitReady(ctx, func(ctx context.Context) error {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.PingContext(ctx)
	})
	if err != nil {
		return "", fmt.Errorf("postgres container at %s: %w", addr, err)
	}
	return dsn, nil
}

// startRedis runs Redis in a container and returns its address once it
// answers PING.
func (d dockerCLI) startRedis() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	id, err := d.start(ctx, "--publish", "127.0.0.1::6379", redisImage)
	if err != nil {
		return "", fmt.Errorf("redis container: %w", err)
	}
	addr, err := d.hostAddr(ctx, id, "6379")
	if err != nil {
		return "", fmt.Errorf("redis container: %w", err)
	}
	if err := waitReady(ctx, redisAnswers(addr)); err != nil {
		return "", fmt.Errorf("redis container at %s: %w", addr, err)
	}
	return addr, nil
}

// startRedisCluster runs three cluster-mode nodes in one container. Each
// node listens on a port that is published on the same port of the host
// and announces 127.0.0.1, so the addresses the cluster reports in its
// redirections are the ones a client on the host dials.
func (d dockerCLI) startRedisCluster() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"--entrypoint", "sh"}
	var script strings.Builder
	var addrs []string
	for i := 0; i < 3; i++ {
		p, err := freeClusterPort()
		if err != nil {
			return nil, err
		}
		port := strconv.Itoa(p)
		addrs = append(addrs, "127.0.0.1:"+port)
		args = append(args, "--publish", "127.0.0.1:"+port+":"+port)
		fmt.Fprintf(&script, "redis-server --port %s --cluster-enabled yes --cluster-config-file nodes-%s.conf "+
			"--cluster-announce-ip 127.0.0.1 --save '' --appendonly no --protected-mode no --daemonize yes; ", port, port)
	}
	script.WriteString("exec sleep infinity")
	if _, err := d.start(ctx, append(args, redisImage, "-c", script.String())...); err != nil {
		return nil, fmt.Errorf("redis cluster container: %w", err)
	}
	for _, a := range addrs {
		if err := waitReady(ctx, redisAnswers(a)); err != nil {
			return nil, fmt.Errorf("redis cluster container, node %s: %w", a, err)
		}
	}
	// Inside the container the nodes meet each other on 127.0.0.1 too.
	return addrs, joinCluster(addrs, addrs)
}

func redisAnswers(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer c.Close()
		return c.Ping(ctx).Err()
	}
}

// waitReady calls ready until it succeeds or ctx ends, pausing briefly
// between attempts: a server in a fresh container has no other way to say
// it is up.
func waitReady(ctx context.Context, ready func(context.Context) error) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ready(attempt)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
