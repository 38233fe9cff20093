//go:build !unix

package burn

import "syscall"

// procAttr places a burner; without sessions (not unix), every burner is
// a plain child.
func procAttr(Mode) *syscall.SysProcAttr { return nil }
