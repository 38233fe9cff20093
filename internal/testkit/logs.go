package testkit

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Logs captures what log/slog's default logger receives until the test
// ends. It replaces the default logger: tests that use it must not run in
// parallel with others that log.
type Logs struct {
	mu   sync.Mutex
	recs []slog.Record
}

// CaptureLogs installs a Logs as slog's default handler until t ends.
func CaptureLogs(t testing.TB) *Logs {
	t.Helper()
	l := &Logs{}
	prev := slog.Default()
	slog.SetDefault(slog.New(l))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return l
}

// Enabled, WithAttrs, WithGroup and Handle make Logs a slog.Handler.
func (l *Logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *Logs) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *Logs) WithGroup(string) slog.Handler            { return l }
func (l *Logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// At returns the messages logged at level that start with prefix, each
// with its attributes appended as key=value.
func (l *Logs) At(level slog.Level, prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Level != level || !strings.HasPrefix(r.Message, prefix) {
			continue
		}
		line := r.Message
		r.Attrs(func(a slog.Attr) bool {
			line += " " + a.String()
			return true
		})
		out = append(out, line)
	}
	return out
}
