package testcontainers

import (
	"testing"

	"go.uber.org/goleak"
)

// A server started after goleak.IgnoreCurrent leaves its goroutines running
// past the check: GoleakOptions ignores exactly those and still reports any
// other goroutine left behind.
func TestGoleakOptions_ignoreBackendsOnly(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	srv := NewRedisServer(t) // starts a redis-server from PATH, kept to cleanup
	if err := goleak.Find(ignore); err == nil {
		t.Fatal("without GoleakOptions the running server's goroutines are not reported: the test proves nothing")
	}
	if err := goleak.Find(GoleakOptions(ignore)...); err != nil {
		t.Fatalf("with GoleakOptions: %v", err)
	}

	stop := make(chan struct{})
	defer close(stop)
	go func() { <-stop }() // a leak of the test's own
	if err := goleak.Find(GoleakOptions(ignore)...); err == nil {
		t.Fatal("GoleakOptions hides a goroutine that is not a backend's")
	}
	srv.Stop()
}
