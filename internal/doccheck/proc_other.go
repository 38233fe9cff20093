//go:build !unix

package main

import "os/exec"

// ownGroup does nothing here: cancellation kills cmd's process alone.
func ownGroup(*exec.Cmd) {}
