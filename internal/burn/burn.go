// Package burn keeps a machine's cores busy, so that timing-sensitive code
// can be run and measured as on a machine with no CPU to spare.
//
// Spin is the spinning itself (internal/cmd/burner, which `make
// stress-test` runs, is Spin behind flags). Start runs the same spinners in
// a separate process — the running executable, started again — for
// programs such as asidebench -busy: a separate process competes for the
// cores through the operating system's scheduler, as another program
// would, not through the Go scheduler of the measured program. Such a
// program calls Child first thing in main (and in TestMain).
//
// Where the burner sits decides what it models (Mode): in a process
// session of its own (Neighbour, the default of -busy) it is a co-tenant,
// weighed apart from the measured program as the scheduler weighs another
// service on a shared host; in the measured program's session (Group) its
// spinners compete with the program's threads one for one, as more busy
// threads of the program itself would.
package burn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// childEnv names the variable by which Start tells the process it starts
// how many spinners to run.
const childEnv = "ASIDEKIT_BURN_CHILD"

// ready is the line a child writes once every spinner has spun.
const ready = "burn: spinning"

// startTimeout bounds how long Start waits for the child's ready line: an
// executable that does not call Child never writes it.
const startTimeout = 30 * time.Second

// ErrNoChild is returned (wrapped) by Start when the started executable
// does not answer as a burner: its main does not call Child.
var ErrNoChild = errors.New("burn: the executable does not run as a burner (main must call burn.Child)")

// sink keeps the compiler from removing the spinners' loop.
var sink atomic.Uint64

// Spin starts n goroutines that spin on arithmetic for the life of the
// process, and returns once each has done its first round (a few
// milliseconds of CPU).
func Spin(n int) {
	var first sync.WaitGroup
	first.Add(n)
	for range n {
		go spin(first.Done)
	}
	first.Wait()
}

func spin(started func()) {
	x := uint64(1)
	for {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink.Store(x)
		if started != nil {
			started()
			started = nil
		}
	}
}

// Child runs the process as a burner if Start started it, and returns at
// once otherwise. A burner spins (one spinner per count Start was given),
// says so on its standard output, and exits when its standard input ends:
// when its parent stops it or exits, however the parent exits (the kernel
// closes the parent's end of the pipe even on SIGKILL).
func Child() {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		fmt.Fprintf(os.Stderr, "burn: %s=%q: want a positive count\n", childEnv, v)
		os.Exit(2)
	}
	Spin(n)
	fmt.Println(ready)
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// Mode says where Start runs a burner, and so whom it models. The zero
// Mode is Off: no burner. As a flag (flag.Var), -busy alone means
// Neighbour, and -busy=group, -busy=neighbour, -busy=false name the
// others.
type Mode uint8

const (
	// Off runs no burner: a quiet run.
	Off Mode = iota
	// Neighbour runs the burner in a process session of its own (setsid):
	// on Linux, autogroup scheduling then weighs it as a group of its own,
	// against the measured program's group, as CFS weighs the cgroups of
	// two services (or containers) on a shared host. This is what a
	// production host resembles: a co-tenant takes its share of the cores,
	// not one share per spinning thread.
	Neighbour
	// Group runs the burner in the starter's session, as a plain child:
	// its spinners compete with the measured program's threads one for
	// one (2 spinners against a program of a few threads take most of
	// the cores), which models more busy threads of the same service, a
	// harsher case than a neighbour. It was -busy's only mode before.
	Group
)

// String returns the Mode's flag value: "false", "neighbour" or "group".
func (m Mode) String() string {
	switch m {
	case Neighbour:
		return "neighbour"
	case Group:
		return "group"
	}
	return "false"
}

// Set parses a flag value: "true" (the flag alone), "neighbour" (or
// "neighbor", "setsid") for Neighbour, "group" for Group, "false" for Off.
func (m *Mode) Set(s string) error {
	switch s {
	case "true", "neighbour", "neighbor", "setsid":
		*m = Neighbour
	case "group":
		*m = Group
	case "false", "":
		*m = Off
	default:
		return fmt.Errorf("burn: busy mode %q: want neighbour, group or false", s)
	}
	return nil
}

// IsBoolFlag lets the flag stand alone (-busy), as a bool flag does.
func (m *Mode) IsBoolFlag() bool { return true }

// Process is a burner started by Start.
type Process struct {
	mode     Mode
	spinners int
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	once     sync.Once
	err      error
}

// Start starts the running executable again as a burner with n spinners,
// placed as mode says (Off is Neighbour), and returns once they spin.
// The burner lives until Stop, or until this
// process exits, however it exits. The executable's main must call Child
// before anything else; if it does not, Start stops it and returns an
// error wrapping ErrNoChild.
func Start(n int, mode Mode) (*Process, error) {
	if n < 1 {
		return nil, fmt.Errorf("burn: %d spinners: want at least 1", n)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("burn: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(n))
	if mode != Group {
		mode = Neighbour
	}
	cmd.SysProcAttr = procAttr(mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("burn: %w", err)
	}
	lines := &firstLine{line: make(chan string, 1)}
	cmd.Stdout = lines
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("burn: start %s: %w", exe, err)
	}
	p := &Process{mode: mode, spinners: n, cmd: cmd, stdin: stdin}
	select {
	case s := <-lines.line:
		if s == ready {
			return p, nil
		}
	case <-time.After(startTimeout):
	}
	_ = cmd.Process.Kill()
	_ = p.Stop()
	return nil, fmt.Errorf("%w: %s", ErrNoChild, exe)
}

// firstLine is a child's standard output: it passes on the first line and
// drops the rest.
type firstLine struct {
	buf  []byte
	sent bool
	line chan string // the first line, without its newline
}

// Write is called by one goroutine of os/exec at a time.
func (f *firstLine) Write(b []byte) (int, error) {
	if f.sent {
		return len(b), nil
	}
	f.buf = append(f.buf, b...)
	if i := bytes.IndexByte(f.buf, '\n'); i >= 0 || len(f.buf) > 4096 {
		if i < 0 {
			i = len(f.buf)
		}
		f.line <- string(f.buf[:i])
		f.sent, f.buf = true, nil
	}
	return len(b), nil
}

// stopTimeout bounds how long Stop waits for the burner to exit on end
// of input before it kills it.
const stopTimeout = 30 * time.Second

// Stop ends the burner the way its parent's exit would (by closing its
// standard input) and waits for it to exit; a burner still running after
// 30 s is killed and Stop says so. Stop may be called more than once;
// later calls return the first call's result. A nil *Process (no
// burner) stops at once.
func (p *Process) Stop() error {
	if p == nil {
		return nil
	}
	p.once.Do(func() {
		_ = p.stdin.Close()
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(stopTimeout):
			_ = p.cmd.Process.Kill()
			<-done
			p.err = fmt.Errorf("burn: burner %d did not exit on end of input; killed", p.cmd.Process.Pid)
			return
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() {
			err = nil // killed (by a signal, or by Start): not the caller's error
		}
		p.err = err
	})
	return p.err
}

// Spinners returns the number of spinning threads; 0 for a nil *Process.
func (p *Process) Spinners() int {
	if p == nil {
		return 0
	}
	return p.spinners
}

// Mode returns where the burner runs; Off for a nil *Process.
func (p *Process) Mode() Mode {
	if p == nil {
		return Off
	}
	return p.mode
}

// CPU returns the CPU time the burner used, once it has stopped (zero
// before).
func (p *Process) CPU() time.Duration {
	if p.cmd.ProcessState == nil {
		return 0
	}
	return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime()
}
