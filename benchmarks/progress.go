package benchmarks

import (
	"sync"
	"time"
)

// Progress is told how far a run has got, e.g. to draw a progress bar.
// Its methods may be called from several goroutines.
type Progress interface {
	// Start announces a phase of total units (operations, or milliseconds
	// for timed phases) and returns its tracker.
	Start(name string, total int64) Tracker
}

// Tracker follows one phase.
type Tracker interface {
	// Add reports n more units done.
	Add(n int64)
	// Done ends the phase.
	Done()
}

type nopTracker struct{}

func (nopTracker) Add(int64) {}
func (nopTracker) Done()     {}

// track starts a phase on the Env's Progress, or a no-op one.
func (e *Env) track(name string, total int64) Tracker {
	if e.progress == nil {
		return nopTracker{}
	}
	return e.progress.Start(name, total)
}

// trackTime starts a phase of d measured in milliseconds and advances it
// with the clock until the returned stop is called.
func (e *Env) trackTime(name string, d time.Duration) (stop func()) {
	tr := e.track(name, d.Milliseconds())
	if _, ok := tr.(nopTracker); ok {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				tr.Add(now.Sub(last).Milliseconds())
				last = now
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		tr.Done()
	}
}
