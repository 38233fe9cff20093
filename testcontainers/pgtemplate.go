package testcontainers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
)

// initdbArgs are the arguments every data directory this package makes is
// initialised with (after -D).
var initdbArgs = []string{"-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"}

// initdbRuns counts the initdb processes this test binary ran (tests).
var initdbRuns atomic.Int64

// initDataDir makes a fresh data directory at data, owned by cred's user.
//
// initdb costs about 1.5 CPU-seconds, and a test run without ASIDEKIT_*
// starts a PostgreSQL in most of its test binaries, so the first initdb of
// a machine is kept as a template (in the temporary directory, named by
// the initdb binary, its size and time and the arguments and user, so a
// new PostgreSQL or user gets a template of its own) and later data
// directories are copies of it (`cp -a`, about a tenth of the cost). A
// template is made in a directory of its own and renamed into place when
// complete, so concurrent test binaries never copy half of one; it stays
// there (about 40 MB) for the next run. Whenever
// the template cannot be made or copied, initdb runs into data directly.
func initDataDir(initdb, data string, cred *syscall.Credential) error {
	if tmpl, err := pgTemplate(initdb, cred); err == nil {
		if exec.Command("cp", "-a", tmpl, data).Run() == nil {
			return nil
		}
		_ = os.RemoveAll(data) // the copy is only a shortcut: initdb below
	}
	return runInitdb(initdb, data, cred)
}

// runInitdb runs initdb into data as cred's user.
func runInitdb(initdb, data string, cred *syscall.Credential) error {
	initdbRuns.Add(1)
	cmd := exec.Command(initdb, append([]string{"-D", data}, initdbArgs...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w: %s", err, out)
	}
	return nil
}

// pgTemplate returns the template data directory for initdb and cred's
// user, making it first if there is none.
func pgTemplate(initdb string, cred *syscall.Credential) (string, error) {
	fi, err := os.Stat(initdb)
	if err != nil {
		return "", err
	}
	uid := os.Geteuid()
	if cred != nil {
		uid = int(cred.Uid)
	}
	h := sha256.New()
	fmt.Fprintln(h, initdb, fi.Size(), fi.ModTime().UnixNano(), uid, initdbArgs)
	name := "asidekit-pg-template-" + hex.EncodeToString(h.Sum(nil))[:16]
	root := filepath.Join(os.TempDir(), name)
	data := filepath.Join(root, "data")
	if _, err := os.Stat(filepath.Join(root, "complete")); err == nil {
		return data, nil
	}
	tmp, err := os.MkdirTemp("", name+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // left only when the rename did not take it
	if _, err := pgCred(tmp); err != nil {
		return "", err
	}
	if err := runInitdb(initdb, filepath.Join(tmp, "data"), cred); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, root); err != nil {
		// Another test binary made it first: use theirs.
		if _, statErr := os.Stat(filepath.Join(root, "complete")); statErr != nil {
			return "", err
		}
	}
	return data, nil
}
