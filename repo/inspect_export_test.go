package repo

import (
	"testing"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// SetInspectSecondLook turns Inspect's second look on or off until t ends.
func SetInspectSecondLook(t testing.TB, on bool) {
	prev := testswitch.SecondLookOff.Load()
	testswitch.SecondLookOff.Store(!on)
	t.Cleanup(func() { testswitch.SecondLookOff.Store(prev) })
}
