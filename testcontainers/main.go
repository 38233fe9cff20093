package testcontainers

import (
	"os"
	"testing"
)

// Main runs the tests of m, then stops every server and container this
// package started and removes their temporary directories. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { testcontainers.Main(m) }
//
// Without it, servers started from binaries still stop when the test binary
// exits, but containers keep running until removed (see containerLabel).
func Main(m *testing.M) {
	code := m.Run()
	stopAll()
	stopContainers()
	os.Exit(code)
}
