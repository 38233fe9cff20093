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
	s, err := startPGServer(extra...)
	if err != nil {
		return "", err
	}
	return s.dsn, nil
}

// binServer is a PostgreSQL server this package started from binaries.
type binServer struct {
	dsn  string // admin DSN (database postgres)
	dir  string // temporary directory: data/ is the data directory
	port int
	cred *syscall.Credential // the user the server runs as; nil: this one
	p    *proc
}

// pgCred returns the credential PostgreSQL's processes run with (the
// postgres user when this process is root, which PostgreSQL refuses to run
// as) and gives that user dir.
func pgCred(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and there is no postgres user to run PostgreSQL as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// startPGServer makes a data directory (initDataDir) and then runs the
// server, as startPostgresBinary.
func startPGServer(extra ...string) (*binServer, error) {
	initdb, err := findPGBinary("initdb")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "asidekit-pg-")
	if err != nil {
		return nil, err
	}
	cred, err := pgCred(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := initDataDir(initdb, data, cred); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s, err := runPGServer(dir, cred, extra...)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// runPGServer starts postgres on the data directory dir/data, on a free
// loopback port, and waits until it accepts connections. The process
// removes dir when stopped.
func runPGServer(dir string, cred *syscall.Credential, extra ...string) (*binServer, error) {
	server, err := findPGBinary("postgres")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(port), "-h", "127.0.0.1", "-k", dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300"}, extra...)
	cmd := exec.Command(server, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// SIGINT is PostgreSQL's fast shutdown.
	p, err := start("postgres :"+strconv.Itoa(port), cmd, dir, syscall.SIGINT)
	if err != nil {
		return nil, err
	}
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitFor(p, func() error { return pingPostgres(dsn) }); err != nil {
		p.Stop()
		return nil, err
	}
	return &binServer{dsn: dsn, dir: dir, port: port, cred: cred, p: p}, nil
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
