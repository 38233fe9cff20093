package repo

import (
	"testing"

	"github.com/asidekit/asidekit/internal/testswitch"
)

// SetUnknownUpkeepOff switches off (true) or on the upkeep of writes whose
// outcome is unknown, for the tests that show what it prevents. Tests
// that use it must not run in parallel with other tests of writes.
func SetUnknownUpkeepOff(off bool) { testswitch.UnknownUpkeepOff.Store(off) }

// SetBeforeUpkeep runs f between every write's COMMIT and its cache
// upkeep until the test ends (nil: none).
func SetBeforeUpkeep(t testing.TB, f func()) {
	beforeUpkeep.Store(&f)
	t.Cleanup(func() { beforeUpkeep.Store(nil) })
}

// SetFillCompareOff switches the version compare of write-through stores
// off (true) or on.
func SetFillCompareOff(off bool) { testswitch.FillCompareOff.Store(off) }

// SetVersionStartOff makes a writer's version read a plain GET that
// starts no version (true), or the SET NX GET it is (false).
func SetVersionStartOff(t testing.TB, off bool) {
	testswitch.VersionStartOff.Store(off)
	t.Cleanup(func() { testswitch.VersionStartOff.Store(false) })
}
