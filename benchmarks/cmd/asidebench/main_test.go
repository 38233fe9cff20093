package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/asidekit/asidekit/benchmarks"
	"github.com/asidekit/asidekit/internal/burn"
	"github.com/asidekit/asidekit/testcontainers"
)

func TestMain(m *testing.M) {
	burn.Child() // TestRun_busy starts the test binary again as its burner
	smallest()
	testcontainers.Main(m)
}

// smallest sets the sizes of every run of the test binary to the
// smallest that still show each effect the tests check (see testSizes):
// under the race detector the demo's own sizes take minutes of CPU.
func smallest() {
	testSizes.params = func(p *benchmarks.Params) {
		p.Hit.Keys, p.Hit.Ops, p.Hit.Rounds = 10, 400, 10
		p.Penetration.Rows, p.Penetration.AbsentIDs, p.Penetration.Reads = 100, 100, 300
		p.Avalanche.Keys, p.Avalanche.TTL, p.Avalanche.Tail = 50, time.Second, 100*time.Millisecond
		p.Seqgen.Ops, p.Seqgen.Batch = 200, 10
		p.Skew.Rows, p.Skew.Warmup, p.Skew.Duration = 200, 100*time.Millisecond, 200*time.Millisecond
	}
	testSizes.query = func(q *benchmarks.QueryParams) {
		t := benchmarks.TestQueryParams()
		q.Categories, q.Rows, q.Checked, q.Duration = t.Categories, t.Rows, t.Checked, t.Duration
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestRun_unreachablePostgres(t *testing.T) {
	rd := testcontainers.Redis(t)
	addr := deadAddr(t)
	var out, errb bytes.Buffer
	code := run([]string{"-redis", rd.Addrs[0], "-postgres", "postgres://postgres:secret@" + addr + "/x?sslmode=disable", "hit"}, &out, &errb)
	if code != 1 {
		t.Fatalf("run = %d, want 1; stderr %q", code, errb.String())
	}
	msg := errb.String()
	if n := strings.Count(strings.TrimSpace(msg), "\n"); n != 0 {
		t.Errorf("stderr has %d lines, want one: %q", n+1, msg)
	}
	if !strings.Contains(msg, addr) || !strings.Contains(msg, "unreachable") || strings.Contains(msg, "secret") {
		t.Errorf("stderr %q: want %s named as unreachable, without the password", msg, addr)
	}
}

func TestRun_badFlags(t *testing.T) {
	cases := [][]string{
		{"-nosuchflag", "hit"},
		{"-instances", "x", "hit"},
		{},                     // no scenario
		{"-quick", "stampede"}, // unknown scenario
		{"-progress", "maybe", "hit"},
		{"-embedded", "-redis", "127.0.0.1:6379", "hit"},
		{"-redis", "127.0.0.1:6379", "-redis-cluster", "127.0.0.1:7000", "hit"},
		{"-instances", "-3", "hit"},
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
		if !strings.Contains(errb.String(), "usage: asidebench") {
			t.Errorf("run(%q): no usage on stderr: %q", args, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) wrote to stdout: %q", args, out.String())
		}
	}
}

func TestRun_help(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 {
		t.Errorf("run(-h) = %d, want 0", code)
	}
	if !strings.Contains(errb.String(), "SCENARIO") {
		t.Errorf("run(-h) printed no usage: %q", errb.String())
	}
}

func TestRun_unreachableRedis(t *testing.T) {
	addr := deadAddr(t)

	var out, errb bytes.Buffer
	if code := run([]string{"-redis", addr, "hit"}, &out, &errb); code != 1 {
		t.Fatalf("run = %d, want 1; stderr %q", code, errb.String())
	}
	msg := errb.String()
	if n := strings.Count(strings.TrimSpace(msg), "\n"); n != 0 {
		t.Errorf("stderr has %d lines, want one: %q", n+1, msg)
	}
	if !strings.Contains(msg, addr) || !strings.Contains(msg, "unreachable") {
		t.Errorf("stderr %q does not name %s as unreachable", msg, addr)
	}
}

func TestParseScenarios(t *testing.T) {
	got, err := parseScenarios([]string{"seqgen", "all", "hit"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "hit,penetration,avalanche,breakdown,seqgen,outofband,local_invalidation,skew,outage,query,replica" {
		t.Errorf("all expanded to %v", got)
	}
	got, err = parseScenarios([]string{"breakdown", "hit", "breakdown"})
	if err != nil || strings.Join(got, ",") != "hit,breakdown" {
		t.Errorf("parseScenarios = %v, %v; want [hit breakdown] in canonical order, once each", got, err)
	}
}

func TestCommandLine_hidesDSN(t *testing.T) {
	got := commandLine([]string{"-postgres", "postgres://u:secret@h/db", "-quick", "-postgres=postgres://u:secret@h/db", "all"})
	if strings.Contains(got, "secret") {
		t.Errorf("commandLine leaks the DSN: %s", got)
	}
	if !strings.HasSuffix(got, "-quick -postgres='<dsn>' all") {
		t.Errorf("commandLine = %s", got)
	}
}

// TestRun_busy: -busy runs the scenarios next to a burner (this test
// binary started again, see TestMain) and says so in the table and the
// JSON; the burner is stopped when run returns.
func TestRun_busy(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.json")
	var out, errb bytes.Buffer
	if code := run([]string{"-busy", "-embedded", "-quick", "-progress", "never", "-json", file, "seqgen"}, &out, &errb); code != 0 {
		t.Fatalf("run = %d; stderr:\n%s", code, errb.String())
	}
	want := fmt.Sprintf("busy: %d spinning threads]", runtime.NumCPU())
	if !strings.Contains(out.String(), want) {
		t.Errorf("table does not say %q:\n%s", want, out.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var results []struct{ Busy int }
	if err := json.Unmarshal(b, &results); err != nil || len(results) != 1 || results[0].Busy != runtime.NumCPU() {
		t.Errorf("JSON %s (%v): want one result with \"busy\": %d", b, err, runtime.NumCPU())
	}
	var modes []struct {
		Mode string `json:"busy_mode"`
	}
	if err := json.Unmarshal(b, &modes); err != nil || len(modes) != 1 || modes[0].Mode != "neighbour" {
		t.Errorf("JSON %s (%v): want \"busy_mode\": \"neighbour\" for -busy alone", b, err)
	}
}

// TestRun_busyGroup: -busy=group runs the burner in the old mode (in our
// session) and the table and the JSON say so.
func TestRun_busyGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.json")
	var out, errb bytes.Buffer
	if code := run([]string{"-busy=group", "-embedded", "-quick", "-progress", "never", "-json", file, "seqgen"}, &out, &errb); code != 0 {
		t.Fatalf("run = %d; stderr:\n%s", code, errb.String())
	}
	want := fmt.Sprintf("busy: %d spinning threads in group]", runtime.NumCPU())
	if !strings.Contains(out.String(), want) {
		t.Errorf("table does not say %q:\n%s", want, out.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var results []struct {
		Busy int
		Mode string `json:"busy_mode"`
	}
	if err := json.Unmarshal(b, &results); err != nil || len(results) != 1 || results[0].Busy != runtime.NumCPU() || results[0].Mode != "group" {
		t.Errorf("JSON %s (%v): want one result with \"busy\": %d, \"busy_mode\": \"group\"", b, err, runtime.NumCPU())
	}
}
