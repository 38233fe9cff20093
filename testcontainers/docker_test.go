package testcontainers

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDocker writes a docker client that logs its arguments and answers as
// an engine would, publishing the container ports on the servers at
// pgAddr and redisAddr, so the Docker path runs end to end without an
// engine.
func fakeDocker(t *testing.T, pgAddr, redisAddr string) (dockerCLI, func() []string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	script := `#!/bin/sh
echo "$*" >> ` + log + `
case "$1" in
version) echo 27.0.0 ;;
run) echo cafe0001 ;;
port) case "$3" in 5432/tcp) echo ` + pgAddr + `; echo "[::]:1" ;; *) echo ` + redisAddr + ` ;; esac ;;
rm) ;;
*) echo "unexpected $1" >&2; exit 1 ;;
esac
`
	bin := filepath.Join(dir, "docker")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dockerCLI{bin: bin}, func() []string {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

func TestDockerCLI_startsAndRemovesContainers(t *testing.T) {
	rd := Redis(t)
	pg := Postgres(t)
	u, err := url.Parse(pg.DSN)
	if err != nil || u.Host == "" {
		t.Skipf("the PostgreSQL DSN is not a URL with a host: %v", err)
	}
	d, calls := fakeDocker(t, u.Host, rd.Addrs[0])
	if err := d.available(); err != nil {
		t.Fatal(err)
	}
	dsn, err := d.startPostgres()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dsn, "@"+u.Host+"/postgres") {
		t.Errorf("dsn %q does not point at the published port %s", dsn, u.Host)
	}
	addr, err := d.startRedis()
	if err != nil {
		t.Fatal(err)
	}
	if addr != rd.Addrs[0] {
		t.Errorf("redis addr = %q, want the published %q", addr, rd.Addrs[0])
	}
	saved := docker
	docker = d
	stopContainers()
	docker = saved
	got := calls()
	want := []string{
		"version --format {{.Server.Version}}",
		"run --detach --rm --label asidekit.testcontainers --publish 127.0.0.1::5432 --env POSTGRES_PASSWORD=postgres " + postgresImage,
		"port cafe0001 5432/tcp",
		"run --detach --rm --label asidekit.testcontainers --publish 127.0.0.1::6379 " + redisImage,
		"port cafe0001 6379/tcp",
		"rm --force cafe0001 cafe0001",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docker calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDockerCLI_noEngine(t *testing.T) {
	if err := (dockerCLI{bin: filepath.Join(t.TempDir(), "docker")}).available(); err == nil ||
		!strings.Contains(err.Error(), "no Docker engine answers") {
		t.Fatalf("available() = %v, want no Docker engine answers", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "docker")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := dockerCLI{bin: bin}.available()
	if err == nil || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
		t.Fatalf("available() = %v, want the client's own message", err)
	}
}
