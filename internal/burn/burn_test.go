package burn

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// Modes of the test binary when a test starts it again (see TestMain).
const (
	// notBurnerEnv: the binary answers like a program that does not call
	// Child.
	notBurnerEnv = "BURN_TEST_NOT_BURNER"
	// parentEnv: the binary starts a burner, prints its pid and waits to be
	// killed.
	parentEnv = "BURN_TEST_PARENT"
)

func TestMain(m *testing.M) {
	if os.Getenv(notBurnerEnv) == "1" {
		fmt.Println("some other program")
		os.Exit(0)
	}
	Child()
	if os.Getenv(parentEnv) == "1" {
		p, err := Start(1, Neighbour)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(p.cmd.Process.Pid)
		select {} // until killed
	}
	os.Exit(m.Run())
}

// TestStart_stop: the burner spins until Stop, which only closes its
// standard input, as its parent's exit would.
func TestStart_stop(t *testing.T) {
	p, err := Start(2, Neighbour)
	if err != nil {
		t.Fatal(err)
	}
	if p.Spinners() != 2 {
		t.Errorf("Spinners = %d, want 2", p.Spinners())
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !p.cmd.ProcessState.Exited() || p.cmd.ProcessState.ExitCode() != 0 {
		t.Errorf("burner ended with %v, want exit 0 on end of input", p.cmd.ProcessState)
	}
	if p.CPU() <= 0 {
		t.Errorf("burner used %v of CPU, want some: it did not spin", p.CPU())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestStart_notBurner: an executable that does not call Child is stopped
// and named in the error.
func TestStart_notBurner(t *testing.T) {
	t.Setenv(notBurnerEnv, "1")
	p, err := Start(1, Neighbour)
	if !errors.Is(err, ErrNoChild) {
		t.Fatalf("Start = %v, %v; want ErrNoChild", p, err)
	}
}

func TestStart_badCount(t *testing.T) {
	if _, err := Start(0, Neighbour); err == nil {
		t.Error("Start(0) succeeded")
	}
	var none *Process // no burner: a quiet run
	if none.Spinners() != 0 || none.Stop() != nil {
		t.Error("a nil *Process is not a stopped burner with no spinners")
	}
}
