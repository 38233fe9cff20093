//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup puts cmd in a process group of its own and makes its
// cancellation kill the whole group: go run's child, the program, is
// killed with go itself instead of holding the output pipe open.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
