package testcontainers

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for admin connections
)

// findPGBinary looks for a PostgreSQL server binary on PATH, then in
// Debian's versioned directories, which are not on PATH by default.
func findPGBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s: %w", name, errNoBinary)
}

// startPostgresBinary runs initdb and postgres in a temporary directory on a
// free loopback port and returns an admin DSN. PostgreSQL refuses to run as
// root, so when root it runs as the postgres user. extra are more server
// arguments ("-c", "name=value"; later ones win).
func startPostgresBinary(extra ...string) (string, error) {
	initdb, err := findPGBinary("initdb")
	if err != nil {
		return "", err
	}
	server, err := findPGBinary("postgres")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "asidekit-pg-")
	if err != nil {
		return "", err
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("running as root and there is no postgres user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	args := append([]string{"-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300"}, extra...)
	cmd = exec.Command(server, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// SIGINT is PostgreSQL's fast shutdown.
	p, err := start("postgres :"+strconv.Itoa(port), cmd, dir, syscall.SIGINT)
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", err
	}
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitFor(p, func() error { return pingPostgres(dsn) }); err != nil {
		p.Stop()
		return "", err
	}
	return dsn, nil
}

func pingPostgres(dsn string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}
