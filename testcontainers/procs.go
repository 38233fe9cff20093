package testcontainers

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// proc is a server process this package started and will stop.
type proc struct {
	name string
	cmd  *exec.Cmd
	dir  string // removed when the process stops, if set
	stop syscall.Signal
	done chan struct{}
}

var (
	procsMu sync.Mutex
	procs   []*proc // every process started and not yet stopped
)

// spawn requests go to one goroutine that holds its OS thread for the life of
// the test binary: Pdeathsig fires when the thread that forked the child
// exits, so the forking thread must never exit before the process does.
var spawnOnce sync.Once
var spawnCh chan spawnReq

type spawnReq struct {
	cmd   *exec.Cmd
	reply chan error
}

func spawner() {
	runtime.LockOSThread() // never unlocked: see spawnCh
	for req := range spawnCh {
		req.reply <- req.cmd.Start()
	}
}

// start runs cmd so that it is killed with sig when the test binary exits,
// however it exits, and registers it for Main and stopAll.
func start(name string, cmd *exec.Cmd, dir string, sig syscall.Signal) (*proc, error) {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go spawner()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = sig
	cmd.SysProcAttr.Setpgid = true // keep ^C in the terminal from reaching it first
	reply := make(chan error, 1)
	spawnCh <- spawnReq{cmd: cmd, reply: reply}
	if err := <-reply; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, dir: dir, stop: sig, done: make(chan struct{})}
	go p.wait()
	procsMu.Lock()
	procs = append(procs, p)
	procsMu.Unlock()
	return p, nil
}

// wait reaps the process and closes done; it runs as long as the server does
// (GoleakOptions names it).
func (p *proc) wait() {
	_ = p.cmd.Wait()
	close(p.done)
}

// Stop ends the process (waiting up to 10 s before SIGKILL) and removes its
// directory.
func (p *proc) Stop() {
	_ = p.cmd.Process.Signal(p.stop)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	procsMu.Lock()
	for i, q := range procs {
		if q == p {
			procs = append(procs[:i], procs[i+1:]...)
			break
		}
	}
	procsMu.Unlock()
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func stopAll() {
	procsMu.Lock()
	all := append([]*proc(nil), procs...)
	procsMu.Unlock()
	for _, p := range all {
		p.Stop()
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeClusterPort returns a port that is free on 127.0.0.1 together with
// its cluster bus port (port + 10000), which must stay below 65536; the
// kernel's ephemeral range reaches above 55535, so freePort alone may give a
// port whose bus port cannot exist.
func freeClusterPort() (int, error) {
	for i := 0; i < 100; i++ {
		p, err := freePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 {
			p = 20000 + p%20000 // a port below the ephemeral range
		}
		a, errA := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		b, errB := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+10000))
		if a != nil {
			a.Close()
		}
		if b != nil {
			b.Close()
		}
		if errA == nil && errB == nil {
			return p, nil
		}
	}
	return 0, errors.New("no free port pair for a cluster node")
}

// waitFor polls ready until it succeeds, the process exits or 20 s pass.
func waitFor(p *proc, ready func() error) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited before it was ready: %w", p.name, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 20s: %w", p.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var errNoBinary = errors.New("not on PATH")
