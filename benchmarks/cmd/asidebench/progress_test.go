package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for mpb's writer goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBars_longPhaseDraws(t *testing.T) {
	var out syncBuffer
	b := &bars{out: &out, force: true}
	b.begin()
	tr := b.Start("penetration none", 100)
	tr.Add(10)
	time.Sleep(showAfter + 700*time.Millisecond)
	tr.Add(40)
	time.Sleep(500 * time.Millisecond)
	tr.Done()
	b.end()
	if !strings.Contains(out.String(), "penetration none") {
		t.Errorf("no bar drawn for a phase longer than %v: %q", showAfter, out.String())
	}
}

func TestBars_shortPhaseDrawsNothing(t *testing.T) {
	var out syncBuffer
	b := &bars{out: &out, force: true}
	b.begin()
	tr := b.Start("quick", 10)
	tr.Add(10)
	tr.Done()
	b.end()
	if s := out.String(); strings.Contains(s, "quick") {
		t.Errorf("a bar was drawn for a short phase: %q", s)
	}
}
