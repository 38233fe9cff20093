package testcontainers_test

import (
	"testing"

	"github.com/asidekit/asidekit/internal/isolation"
)

// TestIsolation runs in parallel with the same test in package schema: both
// write the same row and key names on the same servers.
func TestIsolation(t *testing.T) {
	t.Parallel()
	isolation.Check(t)
}
