package testcontainers

import (
	"database/sql"
	"testing"
)

// Two servers started one after the other: the second's data directory is
// a copy of the template (no initdb of its own), and the two are
// independent: a table made in one is not in the other.
func TestPGTemplate_secondServerCopies(t *testing.T) {
	if _, err := findPGBinary("initdb"); err != nil {
		t.Skip(err)
	}
	first, err := startPGServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.p.Stop)
	before := initdbRuns.Load()
	second, err := startPGServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.p.Stop)
	if n := initdbRuns.Load() - before; n != 0 {
		t.Errorf("the second server ran initdb %d times, want 0 (a copy of the template)", n)
	}
	exec := func(dsn, q string) error {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.Exec(q)
		return err
	}
	if err := exec(first.dsn, "CREATE TABLE only_in_first (id int)"); err != nil {
		t.Fatal(err)
	}
	if err := exec(second.dsn, "SELECT * FROM only_in_first"); err == nil {
		t.Error("a table made in the first server is in the second: the copies share a data directory")
	}
	if err := exec(second.dsn, "CREATE TABLE only_in_first (id int)"); err != nil {
		t.Errorf("the second server cannot make its own table: %v", err)
	}
}
