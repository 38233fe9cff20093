//go:build linux

package burn

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStart_parentKilled: a burner whose parent is killed with SIGKILL
// (no chance to call Stop) exits by itself.
func TestStart_parentKilled(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe)
	parent.Env = append(os.Environ(), parentEnv+"=1")
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	var line [32]byte
	k, err := out.Read(line[:])
	if err != nil {
		t.Fatalf("parent: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(line[:k])))
	if err != nil {
		t.Fatalf("parent printed %q, want the burner's pid", line[:k])
	}
	if !running(pid) {
		t.Fatalf("burner %d is not running while its parent is", pid)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	// The burner's exit is an event this process cannot wait on (it is not
	// our child): watch its state, bounded generously for a busy machine.
	deadline := time.Now().Add(30 * time.Second)
	for running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("burner %d still running 30 s after its parent was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// running reports whether process pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// TestStart_mode: a Neighbour burner runs in a process session of its own
// (what a co-tenant is to the scheduler), a Group burner in ours.
func TestStart_mode(t *testing.T) {
	ours := session(t, os.Getpid())
	for _, tc := range []struct {
		mode Mode
		own  bool // in a session of its own
	}{{Neighbour, true}, {Group, false}, {Off, true}} {
		p, err := Start(1, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		got := session(t, p.cmd.Process.Pid)
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		if own := got != ours; own != tc.own {
			t.Errorf("Start(1, %v): burner in session %d, ours %d; want a session of its own: %v", tc.mode, got, ours, tc.own)
		}
		if want := max(tc.mode, Neighbour); p.Mode() != want {
			t.Errorf("Start(1, %v).Mode() = %v, want %v", tc.mode, p.Mode(), want)
		}
	}
}

// TestMode_flag: -busy alone is Neighbour; the values name every mode.
func TestMode_flag(t *testing.T) {
	for in, want := range map[string]Mode{"true": Neighbour, "neighbour": Neighbour, "setsid": Neighbour, "group": Group, "false": Off} {
		var m Mode
		if err := m.Set(in); err != nil || m != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, m, err, want)
		}
	}
	var m Mode
	if err := m.Set("loud"); err == nil {
		t.Error(`Set("loud") succeeded`)
	}
	if !m.IsBoolFlag() {
		t.Error("a Mode flag cannot stand alone")
	}
}

// session returns the session id of process pid (/proc/pid/stat).
func session(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the name: state, ppid, pgrp, session.
	sid, err := strconv.Atoi(fields[3])
	if err != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return sid
}
