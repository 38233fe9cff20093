package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/internal/burn"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) {
	burn.Child() // TestRun_busy starts the test binary again as its burner
	testcontainers.Main(m)
}

// TestRun_badUsage: bad flags and scenarios exit 2 with a message and
// connect to nothing; -h exits 0.
func TestRun_badUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  bool // servers named in the environment
		want string
	}{
		{[]string{"avalanche"}, true, `unknown scenario "avalanche"`},
		{[]string{"-rounds", "-1", "hit"}, true, "must be positive"},
		{[]string{"-embedded", "-redis", "127.0.0.1:1", "hit"}, true, "-embedded excludes"},
		{[]string{"hit"}, false, "name the servers"},
		{[]string{"-nope"}, true, "flag provided but not defined"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			if c.env {
				t.Setenv(benchmarks.EnvRedisAddr, "127.0.0.1:1")
				t.Setenv(benchmarks.EnvPostgresDSN, "postgres://nobody@127.0.0.1:1/x")
			} else {
				t.Setenv(benchmarks.EnvRedisAddr, "")
				t.Setenv(benchmarks.EnvPostgresDSN, "")
			}
			var out, errb bytes.Buffer
			if code := run(c.args, &out, &errb); code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, errb.String())
			}
			if !strings.Contains(errb.String(), c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, errb.String())
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty: %s", out.String())
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "usage: asidepeers") {
		t.Errorf("-h: exit %d, stderr:\n%s", code, errb.String())
	}
}

// TestParseScenarios: nothing and "all" mean every scenario, in run order.
func TestParseScenarios(t *testing.T) {
	for _, args := range [][]string{nil, {"all"}, {"breakdown", "hit", "penetration", "hit", "outside_set", "outside_write", "hot_key",
		"library_delete_fleet", "outside_write_fleet", "hot_key_fleet", "library_delete"}} {
		got, err := parseScenarios(args)
		if err != nil || !slices.Equal(got, scenarioNames) {
			t.Errorf("%q: %v, %v", args, got, err)
		}
	}
}

// TestCommandLine hides a DSN.
func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"-postgres", "postgres://u:secret@h/db", "-postgres=postgres://u:secret@h/db", "-quick"})
	if strings.Contains(got, "secret") || !strings.HasSuffix(got, "-quick") {
		t.Errorf("commandLine = %q", got)
	}
}
