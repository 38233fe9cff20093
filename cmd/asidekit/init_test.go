package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readConfigFile returns the config file at path as written (no ${VAR}
// expanded).
func readConfigFile(t *testing.T, path string) Config {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// testInitSlot: on a database that has the service's repo/cdc slot, init
// finds it (and says so), or takes -slot; the config it writes keeps the
// DSN as an environment reference when the DSN came from $DATABASE_URL or
// was given as ${VAR}, and reads the slot with cdc status.
func testInitSlot(t *testing.T, e *cliEnv, slot string) {
	t.Helper()
	dir := t.TempDir()
	found := filepath.Join(dir, "found.json")
	r := e.runEnv(t, []string{"DATABASE_URL=" + e.pg.DSN}, "init", "-redis", e.rn.Addrs[0], "-namespace", e.ns, "-o", found)
	r.want(t, exitOK, nil)
	if !strings.Contains(r.stdout, "cdc slot "+slot) {
		t.Errorf("init did not say which slot it took: %q", r.stdout)
	}
	c := readConfigFile(t, found)
	if c.CDCSlot != slot {
		t.Errorf("init wrote cdc_slot %q, want the database's %q", c.CDCSlot, slot)
	}
	if c.DSN != "${DATABASE_URL}" {
		t.Errorf("init with $DATABASE_URL wrote dsn %q, want ${DATABASE_URL}", c.DSN)
	}
	// The written config works where DATABASE_URL is set, slot included.
	var st slotStatus
	e.runEnv(t, []string{"DATABASE_URL=" + e.pg.DSN}, "-config", found, "cdc", "status", "-json").want(t, exitProblem, &st)
	if !st.Exists || st.Slot != slot {
		t.Errorf("cdc status with init's config: %+v", st)
	}

	// -dsn equal to $DATABASE_URL is written as the reference too; a
	// -dsn '${X}' is kept as given; -slot wins over the slot found.
	same := filepath.Join(dir, "same.json")
	e.runEnv(t, []string{"DATABASE_URL=" + e.pg.DSN}, "init", "-dsn", e.pg.DSN, "-redis", e.rn.Addrs[0], "-o", same).want(t, exitOK, nil)
	if c := readConfigFile(t, same); c.DSN != "${DATABASE_URL}" {
		t.Errorf("init -dsn $DATABASE_URL's value wrote dsn %q, want ${DATABASE_URL}", c.DSN)
	}
	given := filepath.Join(dir, "given.json")
	r = e.runEnv(t, []string{"CATALOG_DSN=" + e.pg.DSN}, "init", "-dsn", "${CATALOG_DSN}", "-redis", e.rn.Addrs[0], "-slot", "other_slot", "-o", given)
	r.want(t, exitOK, nil)
	if c := readConfigFile(t, given); c.DSN != "${CATALOG_DSN}" || c.CDCSlot != "other_slot" {
		t.Errorf("init -dsn '${CATALOG_DSN}' -slot other_slot wrote dsn %q, cdc_slot %q", c.DSN, c.CDCSlot)
	}
	if !strings.Contains(r.stdout, "cdc slot other_slot (given by -slot)") {
		t.Errorf("init -slot did not say so: %q", r.stdout)
	}
}

// testOverrides: every command's -redis and -dsn replace the config
// file's servers.
func testOverrides(t *testing.T, bin string) {
	e := newCLIEnv(t, bin)
	dead := e.writeConfig(t, "postgres://postgres@"+deadAddr(t)+"/test?sslmode=disable", deadAddr(t))
	e.run(t, "-config", dead, "get", "products", "42").wantError(t, exitUnreachable, "unreachable")
	var rep idReport
	e.run(t, "-config", dead, "get", "-json", "-redis", e.rn.Addrs[0], "-dsn", e.pg.DSN, "products", "42").want(t, exitOK, &rep)
	if rep.DB.Found || !rep.Agree {
		t.Errorf("get with -redis and -dsn over a dead config: %+v", rep)
	}
	e.run(t, "get", "-redis", deadAddr(t), "products", "42").wantError(t, exitUnreachable, "unreachable")
	e.runEnv(t, []string{"CLI_DSN=" + e.pg.DSN}, "-config", dead, "-redis", e.rn.Addrs[0], "-dsn", "${CLI_DSN}", "get", "-json", "products", "42").want(t, exitOK, &rep)
}
