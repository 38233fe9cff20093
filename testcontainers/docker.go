package testcontainers

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	tc "github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Images used on the Docker path.
const (
	postgresImage = "postgres:16-alpine"
	redisImage    = "redis:7-alpine"
)

var (
	dockerOnce sync.Once
	dockerErr  error

	containersMu sync.Mutex
	containers   []tc.Container // started here, terminated by Main
)

// dockerAvailable reports whether a Docker engine answers, asking once.
func dockerAvailable() error {
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		cli, err := tc.NewDockerClientWithOpts(ctx)
		if err != nil {
			dockerErr = fmt.Errorf("no Docker engine answers: %w", err)
			return
		}
		defer cli.Close()
		if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
			dockerErr = fmt.Errorf("no Docker engine answers: %w", err)
		}
	})
	return dockerErr
}

func keep(c tc.Container) {
	containersMu.Lock()
	containers = append(containers, c)
	containersMu.Unlock()
}

func stopContainers() {
	containersMu.Lock()
	all := containers
	containers = nil
	containersMu.Unlock()
	for _, c := range all {
		_ = tc.TerminateContainer(c)
	}
}

// startPostgresDocker runs PostgreSQL in a container and returns an admin
// DSN. extra are more server arguments ("-c", "name=value").
func startPostgresDocker(extra ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := tcpostgres.Run(ctx, postgresImage,
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
		tc.WithCmdArgs(extra...))
	if c != nil {
		keep(c)
	}
	if err != nil {
		return "", fmt.Errorf("postgres container: %w", err)
	}
	return c.ConnectionString(ctx, "sslmode=disable")
}

// startRedisDocker runs Redis in a container and returns its address.
func startRedisDocker() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := tcredis.Run(ctx, redisImage)
	if c != nil {
		keep(c)
	}
	if err != nil {
		return "", fmt.Errorf("redis container: %w", err)
	}
	uri, err := c.ConnectionString(ctx)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(uri, "redis://"), nil
}

// startRedisClusterDocker runs three cluster-mode nodes in one container.
// Each node listens on a port that is mapped to the same port on the host
// and announces 127.0.0.1, so the addresses the cluster reports in its
// redirections are the ones a client on the host dials.
func startRedisClusterDocker() ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ports []string
	var script strings.Builder
	bindings := network.PortMap{}
	for i := 0; i < 3; i++ {
		p, err := freeClusterPort()
		if err != nil {
			return nil, err
		}
		port := strconv.Itoa(p)
		ports = append(ports, port)
		fmt.Fprintf(&script, "redis-server --port %s --cluster-enabled yes --cluster-config-file nodes-%s.conf "+
			"--cluster-announce-ip 127.0.0.1 --save '' --appendonly no --protected-mode no --daemonize yes; ", port, port)
		bindings[network.MustParsePort(port+"/tcp")] = []network.PortBinding{
			{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: port},
		}
	}
	script.WriteString("sleep infinity")
	exposed := make([]string, len(ports))
	for i, p := range ports {
		exposed[i] = p + "/tcp"
	}
	c, err := tc.Run(ctx, redisImage,
		tc.WithEntrypoint("sh", "-c", script.String()),
		tc.WithExposedPorts(exposed...),
		tc.WithHostConfigModifier(func(hc *container.HostConfig) { hc.PortBindings = bindings }),
		tc.WithWaitStrategy(wait.ForListeningPort(exposed[len(exposed)-1])))
	if c != nil {
		keep(c)
	}
	if err != nil {
		return nil, fmt.Errorf("redis cluster container: %w", err)
	}
	addrs := make([]string, len(ports))
	for i, p := range ports {
		addrs[i] = "127.0.0.1:" + p
	}
	// Inside the container the nodes meet each other on 127.0.0.1 too.
	return addrs, joinCluster(addrs, addrs)
}
