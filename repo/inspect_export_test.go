package repo

import "testing"

// SetInspectSecondLook turns Inspect's second look on or off until t ends.
func SetInspectSecondLook(t testing.TB, on bool) {
	prev := secondLook
	secondLook = on
	t.Cleanup(func() { secondLook = prev })
}
