package testcontainers

import "go.uber.org/goleak"

// The goroutines that live as long as the backends this package started, by
// the function each one runs (goleak matches them anywhere in the stack).
var backendGoroutines = []string{
	// procs.go: the thread that forks every server binary, kept for the
	// life of the test binary, and one reaper per running server.
	"github.com/asidekit/asidekit/testcontainers.spawner",
	"github.com/asidekit/asidekit/testcontainers.(*proc).wait",
	// testcontainers-go: the connection to its Ryuk reaper container,
	// held until the test binary ends.
	"github.com/testcontainers/testcontainers-go.(*Reaper).connect.func1",
}

// GoleakOptions returns goleak options that ignore exactly the goroutines
// that outlive a test because this package's backends do (the server
// processes it started and testcontainers-go's reaper connection), followed
// by extra. A test that starts a backend for the first time after
// goleak.IgnoreCurrent would otherwise report them as leaks:
//
//	ignore := goleak.IgnoreCurrent()
//	r := testcontainers.Redis(t) // may start redis-server
//	...
//	goleak.VerifyNone(t, testcontainers.GoleakOptions(ignore)...)
//
// Every other goroutine is still reported.
func GoleakOptions(extra ...goleak.Option) []goleak.Option {
	opts := make([]goleak.Option, 0, len(backendGoroutines)+len(extra))
	for _, fn := range backendGoroutines {
		opts = append(opts, goleak.IgnoreAnyFunction(fn))
	}
	return append(opts, extra...)
}
