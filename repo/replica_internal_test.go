package repo

import (
	"testing"

	"gorm.io/gorm"
)

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]uint64{"0/0": 0, "0/16B3748": 0x16B3748, "1A/FF": 0x1A000000FF, "FFFFFFFF/FFFFFFFF": 1<<64 - 1} {
		if got, err := parseLSN(in); err != nil || got != want {
			t.Errorf("parseLSN(%q) = %X, %v; want %X", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "12", "x/1", "1/100000000"} {
		if _, err := parseLSN(bad); err == nil {
			t.Errorf("parseLSN(%q) accepted", bad)
		}
	}
}

// namedDialector is a gorm.Dialector that only answers its name.
type namedDialector struct {
	gorm.Dialector
	name string
}

func (d namedDialector) Name() string { return d.name }

// Once a repository of the process has replicas, a commit on PostgreSQL
// reads its position; one on another database of the same process (a
// SQLite repository beside it) reads none: it has no WAL position, and
// reading one there failed and logged an ERROR.
func TestNeedsPosition(t *testing.T) {
	was := replicasInUse.Load()
	t.Cleanup(func() { replicasInUse.Store(was) })
	on := func(name string) *gorm.DB {
		return &gorm.DB{Config: &gorm.Config{Dialector: namedDialector{name: name}}}
	}
	for _, c := range []struct {
		replicas bool
		dialect  string
		want     bool
	}{{true, "postgres", true}, {true, "sqlite", false}, {true, "mysql", false}, {false, "postgres", false}} {
		replicasInUse.Store(c.replicas)
		if got := needsPosition(on(c.dialect)); got != c.want {
			t.Errorf("replicas in use %v, %s: needsPosition = %v, want %v", c.replicas, c.dialect, got, c.want)
		}
	}
	if needsPosition(&gorm.DB{Config: &gorm.Config{}}) {
		t.Error("needsPosition with no dialector = true")
	}
}
