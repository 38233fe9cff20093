//go:build unix

package burn

import "syscall"

// procAttr places a burner: a Neighbour in a session of its own (setsid),
// a Group burner in its starter's.
func procAttr(m Mode) *syscall.SysProcAttr {
	if m == Neighbour {
		return &syscall.SysProcAttr{Setsid: true}
	}
	return nil
}
