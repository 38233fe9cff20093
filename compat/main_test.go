package compat_test

import (
	"testing"

	"github.com/asidekit/asidekit/testcontainers"
)

// The SQLite ownership test also uses a real Redis; Main stops whatever
// server it started.
func TestMain(m *testing.M) { testcontainers.Main(m) }
